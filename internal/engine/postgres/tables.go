package postgres

import (
	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/spec"
)

// Names of queuegen's own tables and function.
const (
	RegistryTable  = "queuegen_queues"
	PeriodicTable  = "queuegen_periodic"
	NodesTable     = "queuegen_nodes"
	NotifyFunction = "queuegen_notify"
)

// Registry is the queue registry, queuegen_queues. Its DDL must stay what
// schema/queuegen_queues.sql declares for sqlc (a test compares them).
func (Engine) Registry() *catalog.Table {
	return &catalog.Table{
		Name: RegistryTable,
		Comment: engine.Comment(RegistryTable + " is the queue registry: one row per queue, written by the " +
			"migrations queuegen emits, so that tools such as `queuegen migrate status` find every " +
			"queue table of a database without reading the spec."),
		Columns: []*catalog.Column{
			{Name: "name", Type: "text", NotNull: true},
			{Name: "table_name", Type: "text", NotNull: true},
			{Name: "mode", Type: "text", NotNull: true},
			{Name: "paused", Type: "boolean", NotNull: true, Default: "false"},
			{Name: "registered_at", Type: "timestamptz", NotNull: true, Default: "now()"},
		},
		Indexes: []*catalog.Index{
			{Name: RegistryTable + "_pkey", Primary: true, Columns: []string{"name"}},
			{Name: RegistryTable + "_table_name_key", Unique: true, Constraint: true, Columns: []string{"table_name"}},
		},
		Checks: []*catalog.Check{{Name: RegistryTable + "_mode_check", Expr: "mode IN ('lease', 'transaction')"}},
	}
}

// Periodic is queuegen_periodic. Its DDL must stay what
// schema/queuegen_periodic.sql declares for sqlc.
func (Engine) Periodic() *catalog.Table {
	return &catalog.Table{
		Name: PeriodicTable,
		Comment: engine.Comment(PeriodicTable + " records the last tick pushed of each periodic job, so " +
			"that any number of nodes push each tick exactly once: a node advances the tick and " +
			"pushes the job in one transaction, and of nodes racing for one tick only one advances it."),
		Columns: []*catalog.Column{
			{Name: "queue", Type: "text", NotNull: true},
			{Name: "name", Type: "text", NotNull: true},
			{Name: "last_tick", Type: "timestamptz", NotNull: true},
		},
		Indexes: []*catalog.Index{{Name: PeriodicTable + "_pkey", Primary: true, Columns: []string{"queue", "name"}}},
	}
}

// Nodes is queuegen_nodes. Its DDL must stay what schema/queuegen_nodes.sql
// declares for sqlc.
func (Engine) Nodes() *catalog.Table {
	return &catalog.Table{
		Name:    NodesTable,
		Comment: engine.Comment(NodesTable + engine.NodesComment),
		Columns: []*catalog.Column{
			{Name: "node", Type: "text", NotNull: true},
			{Name: "queue", Type: "text", NotNull: true},
			{Name: "concurrency", Type: "integer", NotNull: true},
			{Name: "running", Type: "integer", NotNull: true},
			{Name: "host", Type: "text", NotNull: true},
			{Name: "pid", Type: "integer", NotNull: true},
			{Name: "started_at", Type: "timestamptz", NotNull: true},
			{Name: "heartbeat_at", Type: "timestamptz", NotNull: true},
			{Name: "heartbeat_ms", Type: "integer", NotNull: true},
		},
		Indexes: []*catalog.Index{{Name: NodesTable + "_pkey", Primary: true, Columns: []string{"node", "queue"}}},
	}
}

// NotifyFunction is queuegen_notify.
func (Engine) NotifyFunction() string { return NotifyFunction }

// bookkeeping are the columns every queue table has, in order. The base
// table's bigserial id is inherited by its children as a default on the
// one sequence, so ids are unique across every queue of the base table.
func bookkeeping(idComment string) []*catalog.Column {
	return []*catalog.Column{
		{Name: "id", Type: "bigserial", NotNull: true, Comment: idComment},
		{Name: "state", Type: "text", NotNull: true, Default: "'available'", Comment: "available, running (leased), succeeded or dead"},
		{Name: "attempt", Type: "integer", NotNull: true, Default: "0", Comment: "claims so far; with id, the fencing token"},
		{Name: "max_attempts", Type: "integer", NotNull: true, Comment: "dead after this many failed attempts"},
		{Name: "priority", Type: "smallint", NotNull: true, Default: "0", Comment: "higher first, where the queue orders by it"},
		{Name: "run_after", Type: "timestamptz", NotNull: true, Default: "now()", Comment: "not claimed before this time"},
		{Name: "created_at", Type: "timestamptz", NotNull: true, Default: "now()"},
		{Name: "attempted_at", Type: "timestamptz", Comment: "when the current attempt was claimed"},
		{Name: "finished_at", Type: "timestamptz", Comment: "when it succeeded or died; retention counts from here"},
		{Name: "locked_by", Type: "text", Comment: "lease mode: the node holding the job"},
		{Name: "locked_until", Type: "timestamptz", Comment: "lease mode: when the lease expires"},
		{Name: "errors", Type: "text[]", NotNull: true, Default: "'{}'", Comment: "one entry per failed attempt, oldest first"},
		{Name: "failures", Type: "jsonb", Comment: engine.FailuresComment},
		{Name: "unique_key", Type: "text", Comment: "dedupe key among unfinished jobs"},
	}
}

const stateCheck = "state IN ('available', 'running', 'succeeded', 'dead')"

// BaseTable is the INHERITS parent: the bookkeeping columns and the spec's
// extra base columns. It checks state for every child and refuses rows of
// its own; its primary key is its own (PostgreSQL gives children none of
// the parent's keys or indexes).
func (Engine) BaseTable(name string, extra []*catalog.Column) *catalog.Table {
	return &catalog.Table{
		Name: name,
		Comment: engine.Comment(name + " is the parent of every queue table declared with inherits: true " +
			"(the default). It holds the job bookkeeping columns; each queue table adds its payload " +
			"columns. It never holds rows itself (the NO INHERIT check), and its primary key and " +
			"indexes are not inherited: each queue table creates its own."),
		Columns: append(bookkeeping("job id, from one sequence shared by every child table"), extra...),
		Checks: []*catalog.Check{
			{Name: name + "_state_check", Expr: stateCheck},
			{Name: name + "_no_rows", Expr: "false", NoInherit: true},
		},
		Indexes: []*catalog.Index{{Name: name + "_pkey", Primary: true, Columns: []string{"id"}}},
	}
}

// TableOptions are the storage parameters of every queue table. A queue
// table is small but churns: each job is inserted, updated two or three
// times, then deleted or finished, so it makes dead tuples as fast as it
// works jobs.
//   - fillfactor 100: every update of a job changes an indexed column
//     (state is in the partial indexes' predicates; run_after and
//     locked_until are index keys), so no update can be HOT and space kept
//     free on a page would go unused.
//   - autovacuum_vacuum_scale_factor 0 and threshold 1000: vacuum after a
//     fixed number of dead tuples, not a fraction of a table whose size
//     swings; autovacuum_vacuum_cost_delay 0: the table is small and hot,
//     so vacuum it at full speed rather than throttled.
//   - analyze after 1000 changed rows, so that the planner's estimates of
//     the claim index stay current as the backlog grows and shrinks.
var TableOptions = []catalog.Option{
	{Name: "fillfactor", Value: "100"},
	{Name: "autovacuum_vacuum_scale_factor", Value: "0"},
	{Name: "autovacuum_vacuum_threshold", Value: "1000"},
	{Name: "autovacuum_vacuum_cost_delay", Value: "0"},
	{Name: "autovacuum_analyze_scale_factor", Value: "0"},
	{Name: "autovacuum_analyze_threshold", Value: "1000"},
}

var optionsComment = engine.Comment("Storage for a table that churns: vacuum after a fixed number of dead " +
	"tuples, unthrottled, and analyze as often; no fillfactor slack, as no job update can be HOT " +
	"(each changes an indexed column).")

// UniqueWhere is the predicate of the unique-key index and of push's ON
// CONFLICT clause; they must match for PostgreSQL to infer the index.
const UniqueWhere = "unique_key IS NOT NULL AND state IN ('available', 'running')"

// QueueTable is a queue's table: the payload columns of an INHERITS child,
// or every column of a standalone table, with its own primary key and the
// partial indexes its queries need.
func (Engine) QueueTable(q engine.QueueTable) *catalog.Table {
	t := &catalog.Table{Name: q.Name, Comment: q.Comment, Options: TableOptions, OptionsComment: optionsComment}
	if q.Buckets > 0 {
		t.Columns = append(distributedColumns(q.Name), q.Payload...)
		t.Checks = []*catalog.Check{{Name: q.Name + "_state_check", Expr: stateCheck}}
		t.Indexes = distributedIndexes(q.Name, q)
		t.Distribution = &catalog.Distribution{Column: BucketColumn, Buckets: q.Buckets, Sequence: q.Name + "_id_seq"}
		return t
	}
	if q.Parent != nil {
		t.Inherits = q.Parent.Name
		t.Columns = q.Payload
	} else {
		t.Columns = append(bookkeeping("job id"), q.Payload...)
		t.Checks = []*catalog.Check{{Name: q.Name + "_state_check", Expr: stateCheck}}
	}
	t.Indexes = indexes(q.Name, q, q.FairBy != "" && !q.Backlog)
	if q.Notify && !q.Backlog {
		t.NotifyTrigger = q.Name + "_notify"
	}
	return t
}

// indexes are the keys and indexes of table name, a queue's table or its
// backlog: the primary key and the partial indexes of the queue's reads;
// the fair index where fair.
func indexes(name string, q engine.QueueTable, fair bool) []*catalog.Index {
	out := []*catalog.Index{{Name: name + "_pkey", Primary: true, Columns: []string{"id"}}}
	claim := []string{"run_after", "id"}
	if q.Priority {
		claim = append([]string{"priority DESC"}, claim...)
	}
	out = append(out, &catalog.Index{Name: name + "_claim_idx", Columns: claim, Where: "state = 'available'",
		Comment: "Serves the claim: its predicate and key are the claim's WHERE and ORDER BY, so a claim reads the first entries of this index and stops."})
	if fair {
		out = append(out, &catalog.Index{Name: name + "_fair_idx", Columns: append([]string{q.FairBy}, claim...), Where: "state = 'available'",
			Comment: "Serves the fair claim: it skips from one " + q.FairBy + " to the next (one probe a value) and reads each value's first due jobs."})
	}
	if q.Lease {
		// The predicate is locked_until IS NOT NULL (true exactly while a
		// job is leased), not state = 'running': the planner would take an
		// index on the running rows for those of a fenced batch complete
		// and compare each with every id of the batch.
		out = append(out,
			&catalog.Index{Name: name + "_lease_idx", Columns: []string{"locked_until"}, Where: "locked_until IS NOT NULL",
				Comment: "Finds leased jobs: those whose lease expired (claimed again, or reaped on their last attempt), and those a restarting node held. There is no index on locked_by: every claim would pay for it, and the leased jobs are only those in flight."})
	}
	if q.Unique {
		out = append(out, &catalog.Index{Name: name + "_unique_key_idx", Unique: true, Columns: []string{"unique_key"}, Where: UniqueWhere,
			Comment: "At most one unfinished job per unique key; push relies on it with ON CONFLICT DO NOTHING."})
	}
	return append(out, &catalog.Index{Name: name + "_finished_idx", Columns: []string{"finished_at"}, Where: "state IN ('succeeded', 'dead')",
		Comment: "Finds finished jobs for retention and for listing dead jobs."})
}

// BacklogTable is the backlog of a queue with two-stage scheduling: an
// INHERITS child of the queue's table, so that every read and change of
// the queue's jobs through the queue table (Get, the counts, the
// dashboard, cancel and retry) sees the backlog's too, while claims read
// the queue table alone (ONLY). Pushes insert here; the scheduler step
// moves due jobs to the queue table through the fair index. It has the
// queue table's indexes, which reads through the parent probe here too,
// and the queue's notify trigger, as pushes insert here.
func (Engine) BacklogTable(q engine.QueueTable, queue *catalog.Table) *catalog.Table {
	name := queue.Name + spec.BacklogSuffix
	t := &catalog.Table{
		Name: name,
		Comment: engine.Comment("Backlog of queue table " + queue.Name + ": pushed jobs wait here until a scheduler step " +
			"moves them to " + queue.Name + ", a batch at a time, each " + q.FairBy + "'s share in turn. Its rows are " +
			"jobs of the queue (INHERITS), so reads of " + queue.Name + " see them too; claims read ONLY " + queue.Name + "."),
		Inherits:       queue.Name,
		Options:        TableOptions,
		OptionsComment: optionsComment,
		Indexes:        indexes(name, q, true),
	}
	if q.Notify {
		t.NotifyTrigger = name + "_notify"
	}
	return t
}

// ArchiveTable is the archive of a queue declared with on_success:
// archive, the table its completed jobs move to: every column of the
// queue's table (its parent's first, as the queue's rows have them), id a
// plain bigint (the queue's sequence numbers the jobs), partitioned by
// range of finished_at. The columns keep the queue's defaults, so that a
// column the spec adds later is added to both tables alike. Its daily partitions are made and
// dropped by the queue's Purge; days without one go to the default
// partition.
func (Engine) ArchiveTable(queue, parent *catalog.Table) *catalog.Table {
	name := queue.Name + spec.ArchiveSuffix
	cols := queue.RowColumns(parent)
	t := &catalog.Table{
		Name: name,
		Comment: engine.Comment("Archive of queue table " + queue.Name + ": its completed jobs, moved here in state " +
			"succeeded by the statement that completes them. Partitioned by day of finished_at; the queue's Purge " +
			"makes the coming days' partitions and drops those past retention whole, so retention leaves no dead " +
			"rows; days without a partition of their own land in " + name + "_default."),
		PartitionBy: "RANGE (finished_at)",
		Indexes: []*catalog.Index{{Name: name + "_id_idx", Columns: []string{"id"},
			Comment: "Finds an archived job by id (Get): one probe per partition."}},
	}
	for _, c := range cols {
		cc := *c
		if cc.Name == "id" {
			cc.Type, cc.Comment = "bigint", "the job's id in "+queue.Name
		}
		t.Columns = append(t.Columns, &cc)
	}
	return t
}

// RateLog is the rate log of a queue with a rate limit: each claim that
// takes jobs adds a row (one per key value with a per-key limit), and
// deletes the rows that have left the window, so the log holds about one
// window of claims.
func (Engine) RateLog(queue *catalog.Table, key *catalog.Column) *catalog.Table {
	name := queue.Name + spec.RateLogSuffix
	t := &catalog.Table{
		Name: name,
		Comment: engine.Comment("Rate log of queue table " + queue.Name + ": the claims of the last window, " +
			"which claims count to hold the rate limit; each claim adds its row and deletes those past the window."),
		Columns: []*catalog.Column{
			{Name: "claimed_at", Type: "timestamptz", NotNull: true, Comment: "when the claim ran"},
		},
		Indexes: []*catalog.Index{{Name: name + "_claimed_at_idx", Columns: []string{"claimed_at"},
			Comment: "Finds the claims of the window, and those past it to delete."}},
	}
	if key != nil {
		t.Columns = append(t.Columns, &catalog.Column{Name: key.Name, Type: key.Type, NotNull: true, Comment: "the claimed jobs' " + key.Name})
	}
	t.Columns = append(t.Columns, &catalog.Column{Name: "jobs", Type: "integer", NotNull: true, Comment: "how many jobs the claim took"})
	return t
}

// Held is true for a row that a transaction still in progress has locked
// or changed: in transaction mode, a job a worker is working, whose claim
// other sessions cannot see until the worker's transaction commits. The
// row's xmax names that transaction; it is in progress for the current
// snapshot when the snapshot lists it, or when it began at or after the
// snapshot's xmax (compared modulo 2^32, as xids wrap). The queries
// template (Depth, transaction mode) and queuegen stats use it; a test
// keeps the template's copy the same.
const Held = `xmax <> '0'::xid AND (xmax::text::bigint IN (SELECT x::text::bigint % 4294967296 FROM pg_snapshot_xip(pg_current_snapshot()) AS x)
        OR (xmax::text::bigint - pg_snapshot_xmax(pg_current_snapshot())::text::bigint % 4294967296 + 4294967296) % 4294967296 < 2147483648)`

// Relations are the table, its indexes (a primary key or unique constraint
// is an index too) and, for a table with a bigserial id of its own, its
// sequence: all relations, whose names PostgreSQL keeps unique per schema.
func (Engine) Relations(t *catalog.Table) []string {
	names := []string{t.Name}
	for _, i := range t.Indexes {
		names = append(names, i.Name)
	}
	if id := t.Column("id"); id != nil && id.Type == "bigserial" {
		names = append(names, t.Name+"_id_seq")
	}
	if t.Distribution != nil {
		names = append(names, t.Distribution.Sequence)
	}
	if t.PartitionBy != "" {
		names = append(names, t.DefaultPartition())
	}
	return names
}

// Limits: NAMEDATALEN-1 bytes a name, 1600 columns a table.
func (Engine) Limits() engine.Limits {
	return engine.Limits{MaxIdentifier: MaxIdentifier, MaxColumns: 1600}
}
