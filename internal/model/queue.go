package model

import (
	"time"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/spec"
)

// Queue is one queue with everything its SQL and Go need.
type Queue struct {
	// Name is the queue's name; GoName its Go name ("Email" for email).
	Name, GoName string
	// Table is the queue's table; QName its name as written in SQL.
	Table *catalog.Table
	QName string
	// Lease is true in lease mode (a committed claim, held by a lease),
	// false in transaction mode (held by the claiming transaction's row
	// lock).
	Lease bool
	// LeaseDuration is how long a claim holds a job in lease mode.
	LeaseDuration time.Duration
	// Nowait makes a claim fail on a row another claim holds, instead of
	// skipping it.
	Nowait bool
	// ClaimOrder is the claim's ORDER BY, matching the claim index.
	ClaimOrder []string
	// FairBy is the column whose values a claim takes jobs from in turn,
	// or "" (see spec.Queue.FairBy).
	FairBy string
	// PerKey and Global are the queue's concurrency limits (see
	// spec.Limits); zero for none.
	PerKey, Global int
	// RateLimit is the most claims per RatePer (see spec.Rate), per value
	// of RateKey (the FairBy input) when it is set; 0 for no rate limit.
	// RateLog is its log, QRateLog the log's name as written in SQL.
	RateLimit int
	RatePer   time.Duration
	RateKey   *Field
	RateLog   *catalog.Table
	QRateLog  string
	// Backlog is the table pushes go to (two-stage scheduling), QBacklog
	// its name as written in SQL, and BacklogBatch how many due jobs a
	// scheduler step tops the queue table up to; nil, "" and 0 otherwise.
	// With a backlog, claims read the queue table alone (QClaim) in claim
	// order, and the scheduler step takes FairBy's values in turn.
	Backlog      *catalog.Table
	QBacklog     string
	BacklogBatch int
	// QClaim is the queue table as claims name it: ONLY QName with a
	// backlog that inherits from it, else QName.
	QClaim string
	// Rotates is true when the claim rotates through FairBy's values
	// (engine.FairRotator): a lease-mode fair claim, with or without
	// limits, on an engine that rotates.
	Rotates bool
	// FairKey is FairBy's payload field (nil without fair_by).
	FairKey *Field
	// Columns are every column of the queue's rows, in table order (the
	// base table's first).
	Columns []string
	// moving marks the copy Mover returns.
	moving bool
	// Delete is true when completing a job deletes its row; false keeps
	// it in state succeeded, in its table or, with Archive, in the
	// archive.
	Delete bool
	// Archive is the table completed jobs move to (on_success: archive),
	// QArchive its name as written in SQL, ArchiveSchema its schema and
	// ArchiveRowType the Go name of its row struct; nil and "" otherwise.
	Archive                                 *catalog.Table
	QArchive, ArchiveSchema, ArchiveRowType string
	// UniqueIndex is the index a unique key relies on; nil without one.
	UniqueIndex *catalog.Index
	// NotifyChannel is the channel pushes notify, or "".
	NotifyChannel string
	// MaxAttempts is the default number of attempts of a job.
	MaxAttempts int
	// Backoff is the retry delay after a failed attempt.
	Backoff Backoff
	// RetainSucceeded and RetainDead are how long finished jobs are kept;
	// zero keeps them forever (and Purge has nothing to do for them).
	RetainSucceeded, RetainDead time.Duration
	// Payload is the job's payload, as Go and as columns.
	Payload *Payload
	// Periodic are the queue's periodic jobs.
	Periodic []*Periodic
	// QueriesFile and AccessorFile are the base names of the queue's
	// query file and Go accessor.
	QueriesFile, AccessorFile string
	// RowType is the Go name of the row struct sqlc generates for the
	// table.
	RowType string
	// Buckets is how many buckets a distributed queue's jobs are spread
	// over (a Citus distributed table, by bucket); 0 for a queue on one
	// node. IDBuckets is what an id is a multiple of, plus its bucket
	// (spec.MaxBuckets), and Sequence the ids' sequence as written in SQL.
	Buckets, IDBuckets int
	Sequence           string
}

// Distributed reports whether the queue's table is distributed over a
// cluster's nodes by bucket: its statements name a bucket, and its
// accessor walks the buckets.
func (q *Queue) Distributed() bool { return q.Buckets > 0 }

// Backoff is an exponential retry delay: Min × Factor^(attempt-1), capped
// at Max, with ±Jitter (a fraction) of randomness.
type Backoff struct {
	Min, Max       time.Duration
	Factor, Jitter float64
}

// Unique reports whether the queue has a unique key.
func (q *Queue) Unique() bool { return q.UniqueIndex != nil }

// Limited reports whether the queue has a concurrency or rate limit,
// which its claims hold by counting leased jobs or logged claims under the
// queue's claim lock.
func (q *Queue) Limited() bool { return q.PerKey > 0 || q.Global > 0 || q.RateLimit > 0 }

// RateBy reports whether the rate limit holds per FairBy value.
func (q *Queue) RateBy() bool { return q.RateKey != nil }

// Keyed reports whether the claim caps each FairBy value: a per-key
// concurrency limit, or a rate limit per value.
func (q *Queue) Keyed() bool { return q.PerKey > 0 || q.RateBy() }

// RunAfterFirst reports whether the claim order starts with run_after (no
// priority), so that a value's earliest run_after says whether its first
// job in claim order is due.
func (q *Queue) RunAfterFirst() bool { return q.ClaimOrder[0] == "run_after" }

// Capped reports whether the claim caps the queue's whole batch: a global
// concurrency limit, or a rate limit for the queue.
func (q *Queue) Capped() bool { return q.Global > 0 || (q.RateLimit > 0 && !q.RateBy()) }

// FairClaim reports whether the claim takes FairBy's values in turn: a
// fair queue without a backlog, or the scheduler step of one with a
// backlog (Mover), whose own claims read in claim order.
func (q *Queue) FairClaim() bool { return q.FairBy != "" && (q.Backlog == nil || q.moving) }

// Moving reports whether q is the scheduler step's view (Mover).
func (q *Queue) Moving() bool { return q.moving }

// Mover is the queue as its scheduler step reads it: the fair claim's
// selection, from the backlog (QName is QBacklog), locking nothing (the
// step runs one at a time, and its DELETE takes only the rows still
// there).
func (q *Queue) Mover() *Queue {
	c := *q
	c.QName, c.Nowait, c.moving = q.QBacklog, false, true
	return &c
}

// Purges reports whether finished jobs are ever deleted by retention.
func (q *Queue) Purges() bool { return q.RetainSucceeded > 0 || q.RetainDead > 0 }

func (m *Model) queue(s *spec.Spec, sq *spec.Queue) *Queue {
	eng := m.Engine
	q := &Queue{
		Name:            sq.Name,
		GoName:          spec.GoName(sq.Name),
		Lease:           sq.Mode == spec.ModeLease,
		Nowait:          sq.Lock == spec.LockNowait,
		Delete:          sq.OnSuccess == spec.OnSuccessDelete,
		MaxAttempts:     sq.MaxAttempts,
		Backoff:         Backoff{Min: sq.Backoff.Min, Max: sq.Backoff.Max, Factor: sq.Backoff.Factor, Jitter: sq.Backoff.Jitter},
		RetainSucceeded: sq.Retention.Succeeded,
		RetainDead:      sq.Retention.Dead,
		QueriesFile:     sq.Name + ".sql",
		AccessorFile:    sq.Name + "_queue.go",
	}
	q.RowType = q.GoName + "Row"
	if q.Lease {
		q.LeaseDuration = sq.Lease
	}
	q.ClaimOrder = []string{"run_after", "id"}
	if sq.Priority {
		q.ClaimOrder = append([]string{"priority DESC"}, q.ClaimOrder...)
	}
	q.Payload = m.payload(s, sq, q.GoName)
	q.FairBy = sq.FairBy
	q.PerKey, q.Global = sq.Limits.PerKey, sq.Limits.Global
	if q.FairBy != "" {
		q.FairKey = q.Payload.Input(q.FairBy)
	}

	mode := "lease mode: a claim is committed at once and holds the job until its lease expires"
	if !q.Lease {
		mode = "transaction mode: a claim holds the job by row lock until the caller's transaction ends"
	}
	comment := "Queue " + q.Name + ": one row per job; " + mode + "."
	var parent *catalog.Table
	switch {
	case sq.Inherits && eng.Inheritance():
		parent = m.Catalog.Base
		comment += "\nThe bookkeeping columns come from " + parent.Name + "; the columns below are the payload."
	case sq.Inherits && len(s.Base.Columns) > 0:
		comment += "\nAfter the bookkeeping columns come the base columns, copied into each queue table (there is no INHERITS), then the payload."
	}
	qt := engine.QueueTable{
		Name:     sq.Table,
		Parent:   parent,
		Payload:  q.Payload.Columns,
		Lease:    q.Lease,
		Priority: sq.Priority,
		FairBy:   sq.FairBy,
		Backlog:  sq.Backlog.Set(),
		Buckets:  sq.Distribute.Buckets,
		Unique:   sq.Unique,
		Notify:   sq.Notify,
		Comment:  engine.Comment(comment),
	}
	q.Table = eng.QueueTable(qt)
	q.QName = eng.Qualify(m.Schema, q.Table.Name)
	q.QClaim = q.QName
	if dist := q.Table.Distribution; dist != nil {
		q.Buckets, q.IDBuckets = dist.Buckets, spec.MaxBuckets
		q.Sequence = eng.Qualify(m.Schema, dist.Sequence)
	}
	for _, c := range q.Table.RowColumns(parent) {
		q.Columns = append(q.Columns, c.Name)
	}
	if b, ok := eng.(engine.Backlogger); ok && sq.Backlog.Set() {
		q.Backlog = b.BacklogTable(qt, q.Table)
		q.QBacklog = eng.Qualify(m.Schema, q.Backlog.Name)
		q.BacklogBatch = sq.Backlog.Batch
		if q.Backlog.Inherits != "" {
			// Claims read the queue table, not the backlog inheriting it.
			q.QClaim = "ONLY " + q.QName
		}
	}
	if a, ok := eng.(engine.Archiver); ok && sq.OnSuccess == spec.OnSuccessArchive {
		q.Delete = false
		q.Archive = a.ArchiveTable(q.Table, parent)
		q.QArchive = eng.Qualify(m.Schema, q.Archive.Name)
		q.ArchiveSchema = m.Schema
		q.ArchiveRowType = q.GoName + "ArchiveRow"
	}
	if r, ok := eng.(engine.RateLogger); ok && sq.Rate.Set() {
		q.RateLimit, q.RatePer = sq.Rate.Limit, sq.Rate.Per
		var key *catalog.Column
		if sq.Rate.By != "" {
			q.RateKey, key = q.Payload.Input(sq.Rate.By), q.Table.Column(sq.Rate.By)
		}
		q.RateLog = r.RateLog(q.Table, key)
		q.QRateLog = eng.Qualify(m.Schema, q.RateLog.Name)
	}
	if _, ok := eng.(engine.FairRotator); ok {
		q.Rotates = q.FairClaim() && q.Lease
	}
	if sq.Unique {
		for _, i := range q.Table.Indexes {
			if i.Unique && !i.Primary && !i.Constraint {
				q.UniqueIndex = i
			}
		}
	}
	if sq.Notify && eng.NotifyFunction() != "" {
		// Pushes notify from the table they insert into.
		q.NotifyChannel = "queuegen_" + q.Table.Name
		if q.Backlog != nil {
			q.NotifyChannel = "queuegen_" + q.Backlog.Name
		}
	}
	for _, pj := range sq.Periodic {
		q.Periodic = append(q.Periodic, periodic(q, pj))
	}
	return q
}
