package ops

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Stats are one queue's counts. The states partition the jobs: ready,
// scheduled and retrying are the available jobs (due now; not yet due
// and never failed; not yet due after failing), running are the jobs a
// worker holds (leased, or in transaction mode locked by the claiming
// transaction), expired the leased jobs whose lease has expired (their
// worker stopped or is late; the next claim takes them back), then
// succeeded and dead, as the Filter states define them.
//
// On PostgreSQL the counts are one statement's, one snapshot. On MySQL a
// plain read cannot see a row lock, so the counts take two statements in
// one READ COMMITTED transaction, milliseconds apart: the counts by state,
// then, for a transaction-mode queue, a locking read of its due jobs that
// passes over the ones a transaction holds (FOR UPDATE SKIP LOCKED, rolled
// back at once); the due jobs it could not lock are counted running, not
// ready. That probe locks the queue's free due jobs for the length of one
// scan, which claims meanwhile pass over. A lease-mode job is held by a
// transaction only inside a claim, between its SELECT and its UPDATE: on
// MySQL such a job counts as it was last committed.
type Stats struct {
	// Queue is the queue; BaseTable, instead, names the INHERITS parent
	// whose counts cover every queue that inherits it.
	Queue     string  `json:"queue,omitempty"`
	BaseTable string  `json:"base_table,omitempty"`
	Paused    bool    `json:"paused"`
	Ready     int64   `json:"ready"`
	Scheduled int64   `json:"scheduled"`
	Retrying  int64   `json:"retrying"`
	Running   int64   `json:"running"`
	Expired   int64   `json:"expired"`
	Succeeded int64   `json:"succeeded"`
	Dead      int64   `json:"dead"`
	OldestAge float64 `json:"oldest_ready_age_seconds"`
	// ClaimsPerSecond counts the claims of the last minute among the jobs
	// still in the table (completed jobs of on_success: delete queues are
	// gone, so there it counts running and retried claims only); 0 where
	// the counts are estimated.
	ClaimsPerSecond float64 `json:"claims_per_second"`
	// Estimated is true when the counts are the query planner's estimates
	// (QueueStatsWithin, on a table too large to count within its budget);
	// OldestUnknown then says that finding the oldest ready job's age
	// took longer than a fifth of the budget (OldestAge is 0).
	Estimated     bool `json:"estimated"`
	OldestUnknown bool `json:"oldest_unknown"`
	// FailuresLastHour counts the errors recorded in the last hour (see
	// Hour); SucceededLastHour the jobs that succeeded in it, where the
	// database keeps succeeded jobs; FailureRate is the one over both
	// (failures ÷ (failures + succeeded)). Each is null where it cannot
	// be said: not measured (a table without its failures column, a
	// base table's row, or counting out of budget), no succeeded jobs
	// kept to count (on_success: delete), no attempt ended in the hour.
	FailuresLastHour  *int64   `json:"failures_last_hour"`
	SucceededLastHour *int64   `json:"succeeded_last_hour"`
	FailureRate       *float64 `json:"failure_rate_last_hour"`
}

// MarshalJSON writes every key, always: queue, or base_table for the row
// across an INHERITS parent, and the other one null.
func (s Stats) MarshalJSON() ([]byte, error) {
	type fields Stats
	var queue, base *string
	if s.BaseTable != "" {
		base = &s.BaseTable
	} else {
		queue = &s.Queue
	}
	return json.Marshal(struct {
		Queue     *string `json:"queue"`
		BaseTable *string `json:"base_table"`
		fields
	}{queue, base, fields(s)})
}

// QueueStats reads the counts of every registered queue.
func (c *Conn) QueueStats(ctx context.Context) ([]Stats, error) {
	return c.eachQueue(ctx, func(q Queue) (Stats, error) {
		s := Stats{Queue: q.Name, Paused: q.Paused}
		if err := c.b.stats(ctx, q, &s); err != nil {
			return s, queueErr(q, err)
		}
		h, err := c.lastHour(ctx, q, hourBudget)
		s.setHour(h)
		return s, queueErr(q, err)
	})
}

// hourBudget bounds the count of a queue's last hour in stats: it reads
// the jobs with failures, and a table that keeps millions of dead jobs
// could take long; past it the hour is left unsaid.
const hourBudget = 5 * time.Second

// eachQueue is the Stats stats reads of every registered queue, in the
// registry's order.
func (c *Conn) eachQueue(ctx context.Context, stats func(Queue) (Stats, error)) ([]Stats, error) {
	qs, err := c.Queues(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Stats, 0, len(qs))
	for _, q := range qs {
		s, err := stats(q)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ErrNoBaseTable is BaseStats's error on an engine without INHERITS
// (MySQL, SQL Server: every queue table carries the base columns itself).
var ErrNoBaseTable = errors.New("no INHERITS base table on this engine: its queue tables carry the base columns themselves, and stats counts each queue")

// BaseStats reads the counts of every queue inheriting base, in one
// statement: a query on an INHERITS parent reads its children too.
// PostgreSQL only: on MySQL it returns ErrNoBaseTable.
func (c *Conn) BaseStats(ctx context.Context, base string) (Stats, error) {
	s := Stats{BaseTable: base}
	return s, c.b.baseStats(ctx, base, &s)
}
