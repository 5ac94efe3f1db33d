package sqlserver

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

// States is the type of a job's state column, whose CHECK constraint
// (stateCheck) admits the four states only.
const States = "VARCHAR(9)"

// stateCheck is the CHECK of every queue table's state column.
func stateCheck(table string) *catalog.Check {
	return &catalog.Check{Name: table + "_state_check", Expr: "state IN ('available', 'running', 'succeeded', 'dead')"}
}

// jsonCheck is the CHECK of a JSON column: it holds one JSON document.
// ISJSON before SQL Server 2022 admits an object or an array only, so the
// value is tested as the one element of an array: any JSON value passes
// (a number, a string, true, false, null), as in PostgreSQL's jsonb, and
// text that is no JSON fails the write (error 547). NULL passes (a NULL
// column is NULL, not JSON null).
func jsonCheck(table, column string) *catalog.Check {
	return &catalog.Check{Name: table + "_" + column + "_json_check", Expr: "ISJSON(N'[' + " + column + " + N']') = 1"}
}

// Registry is the queue registry, queuegen_queues.
func (Engine) Registry() *catalog.Table {
	return &catalog.Table{
		Name: RegistryTable,
		Comment: engine.Comment(RegistryTable + " is the queue registry: one row per queue, written by the " +
			"migrations queuegen emits, so that tools find every queue table of a database without " +
			"reading the spec. A maintenance batch locks its queue's row for its transaction, so " +
			"that one node at a time maintains a queue."),
		Columns: []*catalog.Column{
			{Name: "name", Type: "NVARCHAR(255)", NotNull: true},
			{Name: "table_name", Type: "NVARCHAR(128)", NotNull: true},
			{Name: "mode", Type: "VARCHAR(11)", NotNull: true},
			{Name: "paused", Type: "BIT", NotNull: true, Default: "0"},
			{Name: "registered_at", Type: DateTime, NotNull: true, Default: Now},
		},
		Checks: []*catalog.Check{{Name: RegistryTable + "_mode_check", Expr: "mode IN ('lease', 'transaction')"}},
		Indexes: []*catalog.Index{
			{Name: RegistryTable + "_pkey", Primary: true, Columns: []string{"name"}},
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
			{Name: "queue", Type: "NVARCHAR(200)", NotNull: true},
			{Name: "name", Type: "NVARCHAR(200)", NotNull: true},
			{Name: "last_tick", Type: DateTime, NotNull: true},
		},
		Indexes: []*catalog.Index{{Name: PeriodicTable + "_pkey", Primary: true, Columns: []string{"queue", "name"}}},
	}
}

// Nodes is queuegen_nodes. Times are UTC, like every time here.
func (Engine) Nodes() *catalog.Table {
	return &catalog.Table{
		Name:    NodesTable,
		Comment: engine.Comment(NodesTable + engine.NodesComment),
		Columns: []*catalog.Column{
			// The key fits SQL Server's 900 bytes: a node id of up to 255
			// characters (as locked_by holds), a queue name of up to 128
			// (an identifier).
			{Name: "node", Type: "NVARCHAR(255)", NotNull: true},
			{Name: "queue", Type: "NVARCHAR(128)", NotNull: true},
			{Name: "concurrency", Type: "INT", NotNull: true},
			{Name: "running", Type: "INT", NotNull: true},
			{Name: "host", Type: "NVARCHAR(255)", NotNull: true},
			{Name: "pid", Type: "INT", NotNull: true},
			{Name: "started_at", Type: DateTime, NotNull: true},
			{Name: "heartbeat_at", Type: DateTime, NotNull: true},
			{Name: "heartbeat_ms", Type: "INT", NotNull: true},
		},
		Indexes: []*catalog.Index{{Name: NodesTable + "_pkey", Primary: true, Columns: []string{"node", "queue"}}},
	}
}

// NotifyFunction is "": queuegen does not use Service Broker for wake-ups.
func (Engine) NotifyFunction() string { return "" }

// bookkeeping are the columns every queue table has, in order, before the
// payload. Times are UTC (see Now); run_after and created_at have no
// default, as queuegen's statements always set them.
func bookkeeping() []*catalog.Column {
	return []*catalog.Column{
		{Name: "id", Type: "BIGINT IDENTITY", NotNull: true, Comment: "job id"},
		{Name: "state", Type: States, NotNull: true, Default: "'available'", Comment: "running: leased (lease mode)"},
		{Name: "attempt", Type: "INT", NotNull: true, Default: "0", Comment: "claims so far; with id, the fencing token"},
		{Name: "max_attempts", Type: "INT", NotNull: true, Comment: "dead after this many failed attempts"},
		{Name: "priority", Type: "SMALLINT", NotNull: true, Default: "0", Comment: "higher first, where the queue orders by it"},
		{Name: "run_after", Type: DateTime, NotNull: true, Comment: "not claimed before this time (UTC)"},
		{Name: "created_at", Type: DateTime, NotNull: true, Comment: "UTC, like every time here"},
		{Name: "attempted_at", Type: DateTime, Comment: "when the current attempt was claimed"},
		{Name: "finished_at", Type: DateTime, Comment: "when it succeeded or died; retention counts from here"},
		{Name: "locked_by", Type: "NVARCHAR(255)", Comment: "lease mode: the node holding the job"},
		{Name: "locked_until", Type: DateTime, Comment: "lease mode: when the lease expires"},
		{Name: "errors", Type: "NVARCHAR(MAX)", NotNull: true, Default: "N'[]'", Comment: "JSON array, one string per failed attempt"},
		{Name: "failures", Type: "NVARCHAR(MAX)", Comment: "JSON array: " + engine.FailuresComment},
		{Name: "unique_key", Type: "NVARCHAR(255) COLLATE Latin1_General_100_BIN2", Comment: "dedupe key, compared byte for byte"},
	}
}

// QueueTable is a queue's table: every column (SQL Server has no INHERITS,
// so an inheriting queue's table carries the base columns itself, in the
// payload), its primary key, the state's CHECK and the filtered indexes
// its queries need. A filtered index holds only the rows of the state its
// query reads, so it stays as small as the work in that state, however
// many finished jobs the table keeps.
func (Engine) QueueTable(q engine.QueueTable) *catalog.Table {
	t := &catalog.Table{Name: q.Name, Comment: q.Comment}
	t.Columns = append(bookkeeping(), q.Payload...)
	t.Checks = []*catalog.Check{stateCheck(q.Name), jsonCheck(q.Name, "failures")}
	for _, c := range q.Payload {
		if c.JSON {
			t.Checks = append(t.Checks, jsonCheck(q.Name, c.Name))
		}
	}
	t.Indexes = append(t.Indexes, &catalog.Index{Name: q.Name + "_pkey", Primary: true, Columns: []string{"id"}})
	claim := []string{"run_after", "id"}
	if q.Priority {
		claim = []string{"priority DESC", "run_after", "id"}
	}
	t.Indexes = append(t.Indexes, &catalog.Index{Name: q.Name + "_claim_idx", Columns: claim, Where: "state = 'available'",
		Comment: "Serves the claim: the available jobs in the claim's ORDER BY, so a claim reads the first entries in order and stops, without a sort."})
	if q.FairBy != "" && !q.Backlog {
		t.Indexes = append(t.Indexes, &catalog.Index{Name: q.Name + "_fair_idx", Columns: append([]string{q.FairBy}, claim...), Where: "state = 'available'",
			Comment: "Serves the fair claim: the " + q.FairBy + " values of the available jobs, in order, then for each value its first due jobs in the claim's order, each a seek and a short range read."})
	}
	if q.Lease {
		t.Indexes = append(t.Indexes,
			&catalog.Index{Name: q.Name + "_lease_idx", Columns: []string{"locked_until"}, Where: "state = 'running'",
				Comment: "Finds running jobs by lease expiry: those whose lease expired (claimed again, or reaped on their last attempt), and those a restarting node held."})
	}
	if q.Unique {
		t.Indexes = append(t.Indexes, &catalog.Index{Name: q.Name + "_unique_key_idx", Unique: true, Columns: []string{"unique_key"},
			Where:   "unique_key IS NOT NULL AND state IN ('available', 'running')",
			Comment: "At most one unfinished job per unique key; push checks it under a key-range lock, and the index is the guarantee."})
	}
	t.Indexes = append(t.Indexes, &catalog.Index{Name: q.Name + "_finished_idx", Columns: []string{"finished_at", "state"},
		Where:   "state IN ('succeeded', 'dead')",
		Comment: "Finds finished jobs for retention, oldest first, whatever their state: the purge reads it in order and tests the state in the index."})
	return t
}

// Relations are the names SQL Server keeps per schema: the table and its
// constraints (primary key, unique constraints, checks).
// Index names are per table, but queuegen's are named after their table
// and so unique anyway.
func (Engine) Relations(t *catalog.Table) []string {
	names := []string{t.Name}
	for _, i := range t.Indexes {
		names = append(names, i.Name)
	}
	for _, k := range t.Checks {
		names = append(names, k.Name)
	}
	return names
}

// Limits: 128 characters a name; 1,024 columns a table.
func (Engine) Limits() engine.Limits {
	return engine.Limits{MaxIdentifier: MaxIdentifier, MaxColumns: 1024}
}

// RateLog is the rate log of a queue with a rate limit: one row per claim
// (per value of key, with a per-key rate) with its time and how many jobs
// it took. Its clustered primary key leads with claimed_at, so the rows of
// the window lie together, which the claims' counts read, and those past
// it are the first rows, which LogClaims deletes: a range at one end of
// the table (a heap would keep the pages its deletes empty).
func (Engine) RateLog(queue *catalog.Table, key *catalog.Column) *catalog.Table {
	name := queue.Name + spec.RateLogSuffix
	t := &catalog.Table{
		Name: name,
		Comment: engine.Comment("Rate log of queue table " + queue.Name + ": the claims of the last window, " +
			"which claims count to hold the rate limit; each claim adds its rows and deletes those past the window."),
		Columns: []*catalog.Column{
			{Name: "id", Type: "BIGINT IDENTITY", NotNull: true, Comment: "tells apart claims logged at one time"},
			{Name: "claimed_at", Type: DateTime, NotNull: true, Comment: "when the claim ran (UTC)"},
		},
		Indexes: []*catalog.Index{{Name: name + "_pkey", Primary: true, Columns: []string{"claimed_at", "id"},
			Comment: "Clustered by time: the claims of the window lie together, and those past it, which each claim deletes, come first."}},
	}
	if key != nil {
		t.Columns = append(t.Columns, &catalog.Column{Name: key.Name, Type: key.Type, NotNull: true, Comment: "the claimed jobs' " + key.Name})
	}
	t.Columns = append(t.Columns, &catalog.Column{Name: "jobs", Type: "INT", NotNull: true, Comment: "how many jobs the claim took"})
	return t
}

// ArchiveTable is the archive of a queue table (on_success: archive): its
// completed jobs, moved here by the statement that completes them
// (DELETE … OUTPUT deleted.… INTO the archive). It has the queue table's
// columns, id a plain BIGINT (the job's id, no IDENTITY), and no CHECK
// constraint: SQL Server refuses OUTPUT INTO a table with one (or with a
// trigger or a foreign key). It is clustered on (finished_at, id), so
// retention deletes a range at the start of the table, oldest first, and
// an index on id serves Get. Retention deletes rows in batches rather than
// switching out partitions: partitions would need a partition function and
// scheme that maintenance splits every day under a schema lock, for
// deletes that a clustered range already keeps short.
func (Engine) ArchiveTable(queue, _ *catalog.Table) *catalog.Table {
	name := queue.Name + spec.ArchiveSuffix
	t := &catalog.Table{
		Name: name,
		Comment: engine.Comment("Archive of queue table " + queue.Name + ": its completed jobs, moved here in state " +
			"succeeded by the statement that completes them. Clustered by finished_at; the queue's Purge deletes " +
			"the rows past retention in batches, oldest first."),
		Indexes: []*catalog.Index{
			{Name: name + "_pkey", Primary: true, Columns: []string{"finished_at", "id"}},
			{Name: name + "_id_idx", Columns: []string{"id"}, Comment: "Finds an archived job by id (Get)."},
		},
	}
	for _, c := range queue.Columns {
		cc := *c
		switch cc.Name {
		case "id":
			cc.Type, cc.Comment = "BIGINT", "the job's id in "+queue.Name
		case "finished_at":
			cc.NotNull = true
		}
		t.Columns = append(t.Columns, &cc)
	}
	return t
}

// IDsAfter is the option of a backlog naming its queue table, whose ids
// its own continue (see BacklogTable and ddl.CreateTable).
const IDsAfter = "ids_after"

// BacklogTable is the backlog of a queue table (two-stage scheduling):
// pushes insert here, and a scheduler step moves due jobs to the queue
// table, ids and all. SQL Server has no INHERITS, so it is a table of its
// own with every column of the queue table, in the same order (a spec
// change adds a column to both), its checks under its own names, its
// primary key and the fair index the step reads. Its id is an IDENTITY of
// its own, started above the queue table's when it is created (the
// option IDsAfter; see ddl.CreateTable), so that a moved job keeps an id
// no other job of the queue has; the step inserts it with IDENTITY_INSERT,
// which moves the queue table's identity past it.
func (Engine) BacklogTable(q engine.QueueTable, queue *catalog.Table) *catalog.Table {
	name := queue.Name + spec.BacklogSuffix
	t := &catalog.Table{
		Name: name,
		Comment: engine.Comment("Backlog of queue table " + queue.Name + ": pushed jobs wait here until a scheduler step " +
			"moves them to " + queue.Name + ", a batch at a time, each " + q.FairBy + "'s share in turn, ids and all."),
		Options: []catalog.Option{{Name: IDsAfter, Value: queue.Name}},
	}
	for _, c := range queue.Columns {
		cc := *c
		t.Columns = append(t.Columns, &cc)
	}
	t.Checks = []*catalog.Check{stateCheck(name), jsonCheck(name, "failures")}
	for _, c := range q.Payload {
		if c.JSON {
			t.Checks = append(t.Checks, jsonCheck(name, c.Name))
		}
	}
	claim := []string{"run_after", "id"}
	if q.Priority {
		claim = []string{"priority DESC", "run_after", "id"}
	}
	t.Indexes = []*catalog.Index{
		{Name: name + "_pkey", Primary: true, Columns: []string{"id"}},
		{Name: name + "_fair_idx", Columns: append([]string{q.FairBy}, claim...), Where: "state = 'available'",
			Comment: "Serves the scheduler step: the " + q.FairBy + " values of the waiting jobs, then for each value its first due jobs in the claim's order."},
	}
	return t
}
