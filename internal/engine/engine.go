// Package engine is the seam between queuegen and a database engine.
//
// Everything that differs from one engine to another sits behind the
// Engine interface: the SQL and Go types of columns, the tables and
// indexes a queue needs, the DDL of migrations and which changes can be
// made in place, the templates of the queries and accessors, how sqlc (or
// queuegen itself) turns queries into Go, and goose's dialect. The model
// asks an Engine for every such decision while it builds; package evolve
// asks it to write DDL; package render executes its templates.
//
// The same seam serves run time: an Engine that is a Connector (connect.go)
// says which database addresses are its and opens handles on them, for
// package dburl and through it migrate, the operations commands and the
// dashboard; migrate takes goose's dialect and the default schema from the
// Engine, and asks the server what else it needs through MigrationHost
// (migrations.go). PostgreSQL (package postgres) is the reference
// implementation. A new engine is a new package implementing Engine (and
// Connector and MigrationHost),
// registered with Register from its init function, with its naming rules
// for the spec registered by spec.RegisterRules, and imported by package
// all, the one list of engines, with its templates in templates/<engine>.
// What still asks an engine's name outside the engine packages is listed
// in seam_test.go's stillBranching, which only shrinks.
package engine

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/gocode"
	"github.com/queuegen/queuegen/internal/spec"
)

// Engine is one database engine.
type Engine interface {
	// Name is the engine's name in the spec (engine: …).
	Name() string
	// Check reports what in a valid spec this engine cannot serve, each
	// error naming the spec key and the reason.
	Check(s *spec.Spec) spec.Errors

	// Qualify is name as written in SQL in schema: qualified unless the
	// schema is the engine's default.
	Qualify(schema, name string) string
	// DefaultSchema is the schema tables go in when the spec names none;
	// "" for an engine without schemas inside a database.
	DefaultSchema() string
	// Inheritance reports whether a queue table can inherit the base
	// table's columns (INHERITS). Without it there is no base table: each
	// queue table carries the base columns itself.
	Inheritance() bool
	// Column is the table column a spec column becomes.
	Column(c *spec.Column) *catalog.Column
	// GoType is the Go type of a payload column of type t in the code
	// sqlc (or queuegen, for engines sqlc lacks) generates for it.
	GoType(t spec.Type, nullable bool) gocode.Type
	// Registry is the queue registry table.
	Registry() *catalog.Table
	// Periodic is the periodic-ticks table.
	Periodic() *catalog.Table
	// Nodes is the table of worker processes and their heartbeats.
	Nodes() *catalog.Table
	// NotifyFunction names the trigger function that wakes workers on
	// push, or "" when the engine has no notifications.
	NotifyFunction() string
	// BaseTable is the INHERITS parent with the spec's extra base columns
	// (asked only where Inheritance is true).
	BaseTable(name string, extra []*catalog.Column) *catalog.Table
	// QueueTable is a queue's table with its keys and indexes.
	QueueTable(q QueueTable) *catalog.Table
	// Relations lists the names of the schema-wide objects a table
	// creates (the table, its indexes, a sequence), which must be unique
	// in the schema; constraints and triggers are named per table.
	Relations(t *catalog.Table) []string
	// Limits are the engine's limits on names and tables.
	Limits() Limits

	// DDL writes the statements of migrations for tables in schema.
	DDL(schema string) DDL
	// Goose is the goose dialect the migrations are written for.
	Goose() string

	// Driver names the Go identifiers of the database driver the
	// generated code is written against.
	Driver() Driver
	// Templates is the directory of templates.FS holding the engine's
	// query and sqlc templates.
	Templates() string
}

// Archiver is an Engine that can keep completed jobs in an archive table
// (on_success: archive); an engine without it refuses the key in Check.
type Archiver interface {
	// ArchiveTable is the archive of queue's table (parent is its
	// INHERITS parent, or nil): every column of its rows, partitioned so
	// that retention drops whole partitions.
	ArchiveTable(queue, parent *catalog.Table) *catalog.Table
}

// FairRotator is an Engine whose lease-mode fair claim (fair_by, with or
// without limits) rotates: it takes the values with due jobs from the one
// after where the accessor's previous claim stopped (the claim's after
// argument, an array of that value or of none), up to a quantum of each
// until the batch is full, visits at most a batch's worth of values, and
// returns its jobs in the order it took them, so that the last one's value
// is where the next claim starts. An engine without it walks every value
// with due jobs on every claim.
type FairRotator interface {
	RotatesFairClaims()
}

// RateLogger is an Engine that keeps rate limits: a log of the claims of a
// queue with a rate limit.
type RateLogger interface {
	// RateLog is the rate log of queue table queue: one row per claim (per
	// value of key, when the limit is per value; key is nil otherwise)
	// with its time and how many jobs it took.
	RateLog(queue *catalog.Table, key *catalog.Column) *catalog.Table
}

// Backlogger is an Engine that keeps a queue's backlog in a table of its
// own (two-stage scheduling).
type Backlogger interface {
	// BacklogTable is the backlog of queue table queue (as QueueTable made
	// it for q, with q.Backlog set): a table with every column of the
	// queue's rows, with the indexes its reads and the scheduler step
	// need. Where the engine has inheritance it inherits from queue, whose
	// reads then see its rows too (claims read ONLY the queue table);
	// otherwise it is a table of its own, which the queue's reads of its
	// jobs (Get, Depth, the operations) read beside the queue table, and
	// whose id numbers the queue's jobs (see BacklogNumberer).
	BacklogTable(q QueueTable, queue *catalog.Table) *catalog.Table
}

// Distributor is an Engine that can spread a queue's table over the nodes
// of a cluster (QueueTable.Buckets): an engine without it refuses the
// spec's distribute key (the model asks).
type Distributor interface {
	// DistributedBy names what distributes the tables, for messages
	// ("Citus").
	DistributedBy() string
}

// DistributedDDL is the DDL of a Distributor: what makes a new table
// distributed, and queuegen's own tables reference tables.
type DistributedDDL interface {
	// Distribute distributes t, new and empty, by t.Distribution.
	Distribute(t *catalog.Table) string
	// Reference makes t (queuegen's own table) a reference table, copied
	// to every node, unless it is one already; Unreference undoes it.
	Reference(t *catalog.Table) string
	Unreference(t *catalog.Table) string
}

// RowLimiter is an Engine whose tables have a limit on the size of a row
// that the count of columns does not capture (MySQL's and InnoDB's).
type RowLimiter interface {
	// RowTooBig says why rows of t could be too large for the engine,
	// with their computed size and the limit, or "" when they fit.
	RowTooBig(t *catalog.Table) string
}

// BacklogMover is a DDL that can empty a backlog into its queue table,
// for a queue that no longer has one.
type BacklogMover interface {
	// MoveBacklog moves every row of table backlog into table queue, its
	// INHERITS parent, naming columns.
	MoveBacklog(backlog, queue string, columns []string) string
}

// BacklogDropper is a BacklogMover whose MoveBacklog also drops the
// backlog: it first takes the table out of pushes' reach (a rename, where
// the engine cannot lock a table inside a migration's transaction) and
// drops it once empty, so no DROP TABLE follows it.
type BacklogDropper interface {
	BacklogMover
	// DropsBacklog marks the engine's MoveBacklog as dropping the backlog.
	DropsBacklog()
}

// BacklogNumberer is a DDL whose backlog numbers the jobs pushed to it
// with a counter of its own (AUTO_INCREMENT), apart from its queue
// table's: a backlog made for a queue that already has jobs must start
// above every id the queue table has given, and the queue table must
// number above the backlog's when the backlog goes.
type BacklogNumberer interface {
	// NumberAfter raises table to's next id above every id table from
	// holds or has given.
	NumberAfter(from, to string) string
}

// Partitioner is a DDL that writes the default partition of a table with
// PartitionBy.
type Partitioner interface {
	// CreateDefaultPartition creates t's default partition, which takes
	// the rows no other partition does.
	CreateDefaultPartition(t *catalog.Table) string
}

// Configurer is an Engine with settings of its own in the spec: the model
// uses the engine Configure returns.
type Configurer interface {
	Configure(s *spec.Spec) Engine
}

// SessionSetter is a DDL whose migrations must set session options
// first: Diff puts SessionOptions at the top of every migration's Up and
// Down (not of the schema file).
type SessionSetter interface {
	SessionOptions() string
}

// CheckChanger is a DDL that can add and drop a CHECK constraint of a
// table that holds rows; with an engine's DDL that is not one, a change of
// a table's checks is refused.
type CheckChanger interface {
	// AddCheck adds k to t; DropCheck drops t's check named name.
	AddCheck(t *catalog.Table, k *catalog.Check) string
	DropCheck(t *catalog.Table, name string) string
}

// QueueTable is what a queue's table must serve, for Engine.QueueTable.
type QueueTable struct {
	// Name is the table's name.
	Name string
	// Parent is the base table for an inheriting queue, or nil.
	Parent *catalog.Table
	// Payload are the payload columns (or the JSON column).
	Payload []*catalog.Column
	// Lease is true in lease mode; Priority, Unique and Notify are the
	// spec's keys.
	Lease, Priority, Unique, Notify bool
	// FairBy is the column claims take jobs by in turn, or "".
	FairBy string
	// Backlog is true for a queue whose pushes go to a backlog table:
	// the queue table is claimed in order, the backlog fairly by FairBy.
	Backlog bool
	// Buckets, for an engine that is a Distributor, makes the table
	// distributed over that many buckets; 0 for a table on one node.
	Buckets int
	// Comment describes the queue above CREATE TABLE.
	Comment []string
}

// Limits are an engine's limits on what a spec may ask for.
type Limits struct {
	// MaxIdentifier is the longest name the engine keeps whole.
	MaxIdentifier int
	// MaxColumns is the most columns a table may have.
	MaxColumns int
}

// Driver names the identifiers of an engine's Go database driver that the
// generated accessors use.
type Driver struct {
	// Tx is the transaction type transaction-mode handlers receive.
	Tx gocode.Type
	// ErrNoRows is the error a :one query returns when no row matched.
	ErrNoRows gocode.Ident
	// Runtime is the engine's runtime package (queue/queueimpl/<driver>impl):
	// what the generated code needs that is specific to the driver, such
	// as its transactions and errors. Generated code imports it and
	// queue/queueimpl, never another engine's, so that an application
	// links its own driver only.
	Runtime gocode.ImportPath
	// TxDriver makes the queue.TxDriver that begins and ends transactions
	// on the accessor's database handle (for transaction-mode workers and
	// periodic pushes), in Runtime.
	TxDriver gocode.Ident
	// KeyLimit and NodeLimit are the longest unique key and node id the
	// queue tables hold (unique_key, locked_by): the generated Push and
	// Claim refuse longer ones before any statement.
	KeyLimit, NodeLimit Limit
	// DistributedKeyLimit is KeyLimit for a distributed queue, whose
	// unique index leads with the bucket (engines with distribute only).
	DistributedKeyLimit Limit
}

// Limit is how long a string a column holds; the zero Limit is none.
type Limit struct {
	// Max is the most Units the column holds.
	Max int
	// Unit is what Max counts: "bytes" (of UTF-8), "characters" (code
	// points) or "UTF-16 code units" (queueimpl.CheckLength).
	Unit string
	// Column says where the limit comes from, for the error.
	Column string
}

// DDL writes the SQL statements of migrations for one schema. Each method
// returns complete statements, each ending with a semicolon, with their
// comments above them; statements are separated by newlines.
type DDL interface {
	// CreateSchema creates the schema if it is not the default one
	// ("" otherwise).
	CreateSchema() string
	// CreateTable creates a table with its columns, primary key, unique
	// constraints and checks (not its other indexes).
	CreateTable(t *catalog.Table) string
	// CreateIndex creates an index of a new, empty table.
	CreateIndex(t *catalog.Table, i *catalog.Index) string
	// DropTable drops a table.
	DropTable(t *catalog.Table) string

	// CreateFunction and DropFunction create and drop the named function
	// (the notify trigger function).
	CreateFunction(name string) string
	DropFunction(name string) string
	// CreateTrigger creates t's notify trigger; DropTrigger drops the
	// named trigger of t.
	CreateTrigger(t *catalog.Table) string
	DropTrigger(t *catalog.Table, name string) string

	// Register, Unregister and Reregister write the registry row of a
	// queue.
	Register(q *catalog.Queue) string
	Unregister(name string) string
	Reregister(from, to *catalog.Queue) string
	// ReleaseLeases makes the leased jobs of table t available again, for
	// a queue leaving lease mode: transaction-mode statements never read
	// a running job, so one left leased would never be claimed, reaped or
	// finished. Engines write ReleaseLeasesSQL with their table name.
	ReleaseLeases(t *catalog.Table) string

	// RenameTable renames a table; RenameIndex, RenameConstraint,
	// RenameSequence and RenameTrigger rename what is named after it.
	RenameTable(from, to string) string
	RenameIndex(table, from, to string) string
	RenameConstraint(table, from, to string) string
	RenameSequence(from, to string) string
	RenameTrigger(table, from, to string) string

	// AddColumn, DropColumn and RenameColumn change t's columns.
	// AddRewrites says why adding c to a table that holds rows would
	// rewrite it (a default evaluated once per row), or "".
	AddColumn(t *catalog.Table, c *catalog.Column) string
	AddRewrites(c *catalog.Column) string
	DropColumn(t *catalog.Table, name string) string
	RenameColumn(t *catalog.Table, from, to string) string
	// ChangeType changes a column's type in place; Widens says whether
	// the engine can do that without rewriting the table or checking
	// its rows, and why not.
	ChangeType(t *catalog.Table, c *catalog.Column, from string) string
	Widens(from, to string) (ok bool, why string)
	// SetNotNull, DropNotNull, SetDefault and DropDefault change one
	// column.
	SetNotNull(t *catalog.Table, column string) string
	DropNotNull(t *catalog.Table, column string) string
	SetDefault(t *catalog.Table, column, def string) string
	DropDefault(t *catalog.Table, column string) string
	// SetOptions and ResetOptions change storage options.
	SetOptions(t *catalog.Table, opts []catalog.Option) string
	ResetOptions(t *catalog.Table, names []string) string

	// CreateIndexOnline and DropIndexOnline build and drop an index of a
	// table that may be large and busy, without blocking its writers, in
	// a form that can run again after a failure. OnlineIndexes says
	// whether such statements must run outside a transaction.
	CreateIndexOnline(t *catalog.Table, i *catalog.Index) string
	DropIndexOnline(t *catalog.Table, name string) string
	RenameIndexOnline(table, from, to string) string
	OnlineIndexesNeedNoTransaction() bool
	// MaxIdentifier is the longest name the engine keeps whole.
	MaxIdentifier() int
}

// SqlcAdapter is implemented by an engine whose SQL sqlc's parser and
// catalog know only in part. Package generate hands sqlc the schema and the
// queries through it, and passes the Go that sqlc writes back through it;
// the files queuegen writes keep the engine's own SQL.
type SqlcAdapter interface {
	// SqlcSchema is the catalog as sqlc must read it.
	SqlcSchema(c *catalog.Catalog) *catalog.Catalog
	// SqlcQueries rewrites a query file for sqlc, and SqlcGo undoes the
	// rewrite in the query text sqlc copies into its Go.
	SqlcQueries(sql string) string
	SqlcGo(code string) string
}

// ExactReader is implemented by an engine whose protocol would read some
// column type back inexactly as it is stored: the generated reads of
// jobs (Get, claims) also select each payload column of such a type as an
// expression the protocol renders exactly, exact_<column>, and the
// accessor takes the value from there.
type ExactReader interface {
	// ReadExactly reports whether payload columns of spec type t need it.
	ReadExactly(t spec.Type) bool
	// ExactExpr is that expression of the column col.
	ExactExpr(col string) string
}

// FiniteFloats is implemented by an engine whose float columns hold no
// NaN or infinity: the generated pushes refuse them before any statement.
type FiniteFloats interface {
	FiniteFloats()
}

// QueryCoder is implemented by an engine sqlc has no engine for: queuegen
// writes the Go code of its queries itself (package querycode), in the
// shape of sqlc's, asking the engine what sqlc's catalog would have told.
type QueryCoder interface {
	// ParamType is the Go type of the query parameter @name, one the
	// engine's templates write (payload columns are the model's).
	ParamType(name string) (gocode.Type, bool)
	// ColumnType is the Go type of a bookkeeping column of a queue table,
	// or of a result column the templates name with AS.
	ColumnType(name string) (gocode.Type, bool)
	// Arg is the function that turns a Go value of type t, for a column
	// of SQL type sqlType where the parameter is a payload column's (""
	// otherwise), into what the driver must be sent, or the zero Ident to
	// send it as it is.
	Arg(t gocode.Type, sqlType string) gocode.Ident
	// Scan is the function that wraps a pointer to a result of type t in
	// the sql.Scanner the driver's value must go through, or the zero
	// Ident to scan into the pointer itself.
	Scan(t gocode.Type) gocode.Ident
	// Header is the second line of the Go files, saying who wrote them.
	Header() string
}

var (
	mu      sync.RWMutex
	engines = map[string]Engine{}
)

// Register makes an engine available under its name. Engines call it from
// their init function.
func Register(e Engine) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := engines[e.Name()]; dup {
		panic("engine: " + e.Name() + " registered twice")
	}
	engines[e.Name()] = e
}

// Lookup returns the engine called name.
func Lookup(name string) (Engine, error) {
	mu.RLock()
	defer mu.RUnlock()
	if e, ok := engines[name]; ok {
		return e, nil
	}
	return nil, fmt.Errorf("unknown engine %q: want one of %s", name, strings.Join(names(), ", "))
}

// Names lists the registered engines.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return names()
}

func names() []string {
	var names []string
	for n := range engines {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ReleaseLeasesSQL is ReleaseLeases's statement on table (as the engine
// names it), the same in every engine's SQL; the lease index serves it.
func ReleaseLeasesSQL(table string) string {
	return "UPDATE " + table + "\nSET state = 'available', locked_by = NULL, locked_until = NULL\nWHERE locked_until IS NOT NULL AND state = 'running';"
}
