package mysql

import (
	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/spec"
)

// Names of queuegen's own tables.
const (
	RegistryTable = "queuegen_queues"
	PeriodicTable = "queuegen_periodic"
	NodesTable    = "queuegen_nodes"
)

// States is the type of a job's state column: an ENUM holds one of the four
// states in one byte, and strict SQL mode refuses any other value.
const States = "ENUM('available', 'running', 'succeeded', 'dead')"

// Registry is the queue registry, queuegen_queues.
func (Engine) Registry() *catalog.Table {
	return &catalog.Table{
		Name: RegistryTable,
		Comment: engine.Comment(RegistryTable + " is the queue registry: one row per queue, written by the " +
			"migrations queuegen emits, so that tools such as `queuegen migrate status` find every " +
			"queue table of a database without reading the spec. A maintenance batch locks its " +
			"queue's row for its transaction, so that one node at a time maintains a queue."),
		Columns: []*catalog.Column{
			{Name: "name", Type: "VARCHAR(255)", NotNull: true},
			{Name: "table_name", Type: "VARCHAR(64)", NotNull: true},
			{Name: "mode", Type: "ENUM('lease', 'transaction')", NotNull: true},
			{Name: "paused", Type: "BOOLEAN", NotNull: true, Default: "FALSE"},
			{Name: "registered_at", Type: "DATETIME(6)", NotNull: true, Default: "(" + Now + ")"},
		},
		Indexes: []*catalog.Index{
			{Name: "PRIMARY", Primary: true, Columns: []string{"name"}},
			{Name: RegistryTable + "_table_name_key", Unique: true, Constraint: true, Columns: []string{"table_name"}},
		},
	}
}

// Periodic is queuegen_periodic.
func (Engine) Periodic() *catalog.Table {
	return &catalog.Table{
		Name: PeriodicTable,
		Comment: engine.Comment(PeriodicTable + " records the last tick pushed of each periodic job, so " +
			"that any number of nodes push each tick exactly once: a node advances the tick and " +
			"pushes the job in one transaction, and of nodes racing for one tick only one advances it."),
		Columns: []*catalog.Column{
			{Name: "queue", Type: "VARCHAR(255)", NotNull: true},
			{Name: "name", Type: "VARCHAR(255)", NotNull: true},
			{Name: "last_tick", Type: "DATETIME(6)", NotNull: true},
		},
		Indexes: []*catalog.Index{{Name: "PRIMARY", Primary: true, Columns: []string{"queue", "name"}}},
	}
}

// Nodes is queuegen_nodes. Times are UTC, like every time here.
func (Engine) Nodes() *catalog.Table {
	return &catalog.Table{
		Name:    NodesTable,
		Comment: engine.Comment(NodesTable + engine.NodesComment),
		Columns: []*catalog.Column{
			{Name: "node", Type: "VARCHAR(255)", NotNull: true},
			{Name: "queue", Type: "VARCHAR(255)", NotNull: true},
			{Name: "concurrency", Type: "INT", NotNull: true},
			{Name: "running", Type: "INT", NotNull: true},
			{Name: "host", Type: "VARCHAR(255)", NotNull: true},
			{Name: "pid", Type: "INT", NotNull: true},
			{Name: "started_at", Type: "DATETIME(6)", NotNull: true},
			{Name: "heartbeat_at", Type: "DATETIME(6)", NotNull: true},
			{Name: "heartbeat_ms", Type: "INT", NotNull: true},
		},
		Indexes: []*catalog.Index{{Name: "PRIMARY", Primary: true, Columns: []string{"node", "queue"}}},
	}
}

// NotifyFunction is "": MySQL has no LISTEN/NOTIFY.
func (Engine) NotifyFunction() string { return "" }

// bookkeeping are the columns every queue table has, in order, before the
// payload. Times are UTC (see Now); run_after and created_at have no
// default, as queuegen's statements always set them from the UTC clock.
func bookkeeping() []*catalog.Column {
	return []*catalog.Column{
		{Name: "id", Type: "BIGINT AUTO_INCREMENT", NotNull: true, Comment: "job id"},
		{Name: "state", Type: States, NotNull: true, Default: "'available'", Comment: "running: leased (lease mode)"},
		{Name: "attempt", Type: "INT", NotNull: true, Default: "0", Comment: "claims so far; with id, the fencing token"},
		{Name: "max_attempts", Type: "INT", NotNull: true, Comment: "dead after this many failed attempts"},
		{Name: "priority", Type: "SMALLINT", NotNull: true, Default: "0", Comment: "higher first, where the queue orders by it"},
		{Name: "run_after", Type: "DATETIME(6)", NotNull: true, Comment: "not claimed before this time (UTC)"},
		{Name: "created_at", Type: "DATETIME(6)", NotNull: true, Comment: "UTC, like every time here"},
		{Name: "attempted_at", Type: "DATETIME(6)", Comment: "when the current attempt was claimed"},
		{Name: "finished_at", Type: "DATETIME(6)", Comment: "when it succeeded or died; retention counts from here"},
		{Name: "locked_by", Type: "VARCHAR(255)", Comment: "lease mode: the node holding the job"},
		{Name: "locked_until", Type: "DATETIME(6)", Comment: "lease mode: when the lease expires"},
		{Name: "errors", Type: "JSON", NotNull: true, Default: "(JSON_ARRAY())", Comment: "one string per failed attempt, oldest first"},
		{Name: "failures", Type: "JSON", Comment: engine.FailuresComment},
		{Name: "unique_key", Type: "VARCHAR(255)", Comment: "dedupe key among unfinished jobs"},
	}
}

// uniqueActive is the unique key while the job is unfinished, NULL after:
// MySQL has no partial indexes, and a unique index admits any number of
// NULLs, so a unique index on this generated column holds one unfinished
// job per key and lets finished jobs keep theirs.
var uniqueActive = &catalog.Column{
	Name: "unique_active", Type: "VARCHAR(255) AS (CASE WHEN state IN ('available', 'running') THEN unique_key END) STORED", Generated: true,
	Comment: "unique_key while unfinished; the unique index is on this",
}

// QueueTable is a queue's table: every column (MySQL has no INHERITS, so an
// inheriting queue's table carries the base columns itself, in the
// payload), its primary key and the indexes its queries need. MySQL has no
// partial indexes: the indexes lead with state, so that each query reads
// only the entries of the state it wants, in the order it wants them.
func (Engine) QueueTable(q engine.QueueTable) *catalog.Table {
	t := &catalog.Table{Name: q.Name, Comment: q.Comment}
	t.Columns = bookkeeping()
	if q.Unique {
		t.Columns = append(t.Columns, uniqueActive)
	}
	t.Columns = append(t.Columns, q.Payload...)
	t.Indexes = append(t.Indexes, &catalog.Index{Name: "PRIMARY", Primary: true, Columns: []string{"id"}})
	claim := []string{"state", "run_after", "id"}
	if q.Priority {
		claim = []string{"state", "priority DESC", "run_after", "id"}
	}
	t.Indexes = append(t.Indexes, &catalog.Index{Name: q.Name + "_claim_idx", Columns: claim,
		Comment: "Serves the claim: state, then the claim's ORDER BY, so a claim reads the first available entries in order and stops, without a sort."})
	if q.FairBy != "" && !q.Backlog {
		fair := append([]string{"state", q.FairBy}, claim[1:]...)
		t.Indexes = append(t.Indexes, &catalog.Index{Name: q.Name + "_fair_idx", Columns: fair,
			Comment: "Serves the fair claim: the " + q.FairBy + " values of the available jobs, then one probe per value for its first due jobs, in the claim's order."})
	}
	if q.Lease {
		t.Indexes = append(t.Indexes,
			&catalog.Index{Name: q.Name + "_lease_idx", Columns: []string{"state", "locked_until"},
				Comment: "Finds running jobs: those whose lease expired (claimed again, or reaped on their last attempt), and those a restarting node held. There is no index on locked_by: every push and claim would pay for it, and the running jobs are only those in flight."})
	}
	if q.Unique {
		t.Indexes = append(t.Indexes, &catalog.Index{Name: q.Name + "_unique_key_idx", Unique: true, Columns: []string{"unique_active"},
			Comment: "At most one unfinished job per unique key; push relies on it with ON DUPLICATE KEY UPDATE."})
	}
	t.Indexes = append(t.Indexes, &catalog.Index{Name: q.Name + "_finished_idx", Columns: []string{"finished_at"},
		Comment: "Finds finished jobs for retention, oldest first (finished_at is set only on succeeded and dead jobs)."})
	return t
}

// Relations are the table and its indexes. MySQL keeps index names per
// table, but queuegen's are named after their table and so unique anyway.
func (Engine) Relations(t *catalog.Table) []string {
	names := []string{t.Name}
	for _, i := range t.Indexes {
		if !i.Primary {
			names = append(names, i.Name)
		}
	}
	return names
}

// Limits: 64 characters a name; InnoDB's 1017 columns a table.
func (Engine) Limits() engine.Limits {
	return engine.Limits{MaxIdentifier: MaxIdentifier, MaxColumns: 1017}
}

// ArchivePartition is the archive's last partition, which takes every row
// at or past the last daily partition's end (MAXVALUE): the completions of
// days that have no partition yet. The queue's Purge splits it (REORGANIZE
// PARTITION) to make the coming days' partitions while it is still empty.
const ArchivePartition = "pmax"

// ArchiveTable is the archive of a queue declared with on_success:
// archive, the table its completed jobs move to: every column of the
// queue's table, in its order (the generated Get reads an archived job
// into the queue's row type), id a plain BIGINT (the queue's
// AUTO_INCREMENT numbers the jobs), partitioned by RANGE COLUMNS of
// finished_at, one partition a UTC day, so that retention drops whole
// days (ALTER TABLE … DROP PARTITION) and leaves no purged rows behind.
// MySQL's partitioning asks that every unique key hold the partitioning
// column, and a partitioned table has no foreign keys: the primary key is
// (id, finished_at), finished_at NOT NULL (a completed job always has
// it), and there is no other key. Get probes the primary key by its
// leading id, once a partition. The generated unique_active column is
// kept, computed as in the queue (always NULL here, as every row is
// succeeded), so that the two tables keep the same columns as the spec
// evolves.
func (Engine) ArchiveTable(queue, _ *catalog.Table) *catalog.Table {
	name := queue.Name + spec.ArchiveSuffix
	t := &catalog.Table{
		Name: name,
		Comment: engine.Comment("Archive of queue table " + queue.Name + ": its completed jobs, moved here in state " +
			"succeeded by the transaction that completes them (an INSERT … SELECT … FOR UPDATE, then the DELETE). " +
			"Partitioned by day of finished_at (RANGE COLUMNS); the queue's Purge makes the coming days' " +
			"partitions by splitting the last one, " + ArchivePartition + ", while it is empty, and drops those " +
			"past retention whole, so retention leaves no purged rows."),
		PartitionBy: "RANGE COLUMNS (finished_at)",
		Indexes: []*catalog.Index{{Name: "PRIMARY", Primary: true, Columns: []string{"id", "finished_at"},
			Comment: "Finds an archived job by id (Get): one probe a partition. finished_at is in the key because " +
				"MySQL asks every unique key of a partitioned table to hold the partitioning column."}},
	}
	for _, c := range queue.Columns {
		cc := *c
		switch cc.Name {
		case "id":
			cc.Type, cc.Comment = "BIGINT", "the job's id in "+queue.Name
		case "finished_at":
			cc.NotNull, cc.Comment = true, "when it succeeded; partitions by day, retention counts from here"
		}
		t.Columns = append(t.Columns, &cc)
	}
	return t
}

// BacklogTable is the backlog of a queue with two-stage scheduling, a
// table of its own (MySQL has no INHERITS) with every column of the
// queue's rows: pushes insert here, and the scheduler step moves due jobs
// to the queue table, ids and all, through the fair index; claims read
// the queue table alone. Its AUTO_INCREMENT numbers every job of the
// queue: the queue table takes rows with their ids given, which moves its
// own counter past them, and a backlog added to a queue with jobs starts
// above them (ddl.NumberAfter). It has the indexes of the reads of its
// rows only: the fair index (the step; Depth), the finished index
// (retention of jobs cancelled while they waited), and no claim or lease
// index, as no claim reads it.
func (Engine) BacklogTable(q engine.QueueTable, queue *catalog.Table) *catalog.Table {
	name := queue.Name + spec.BacklogSuffix
	t := &catalog.Table{
		Name: name,
		Comment: engine.Comment("Backlog of queue table " + queue.Name + ": pushed jobs wait here until a scheduler step " +
			"moves them to " + queue.Name + ", a batch at a time, each " + q.FairBy + "'s share in turn, ids and all. " +
			"Its AUTO_INCREMENT numbers the queue's jobs; the reads of the queue's jobs (Get, Depth, the operations " +
			"commands) read both tables; claims read " + queue.Name + " alone."),
	}
	for _, c := range queue.Columns {
		cc := *c
		t.Columns = append(t.Columns, &cc)
	}
	claim := []string{"run_after", "id"}
	if q.Priority {
		claim = []string{"priority DESC", "run_after", "id"}
	}
	t.Indexes = []*catalog.Index{
		{Name: "PRIMARY", Primary: true, Columns: []string{"id"}},
		{Name: name + "_fair_idx", Columns: append([]string{"state", q.FairBy}, claim...),
			Comment: "Serves the scheduler step: the " + q.FairBy + " values of the available jobs, then one probe per value for its first due jobs, in the claim's order."},
		{Name: name + "_finished_idx", Columns: []string{"finished_at"},
			Comment: "Finds finished jobs (cancelled while they waited) for retention."},
	}
	return t
}
