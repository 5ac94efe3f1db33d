// Package spec reads and validates queuegen.yaml, the file in which a Go team
// declares its queues.
//
// Parse checks everything that can be checked without a database: unknown
// keys, names that would reach SQL, types, durations and the combinations
// that make no sense. Every problem is reported as an *Error that names the
// file, line, column and key, so a bad spec is fixed in one pass and nothing
// is generated from it.
package spec

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Spec is a validated queuegen.yaml. Paths are relative to the directory
// holding the spec file, use forward slashes and never leave that directory.
type Spec struct {
	// File is the path the spec was read from, as given to Parse.
	File string
	// Version is the spec format version; only 1 exists.
	Version int
	// Engine is the database engine the queues are generated for
	// ("postgresql" unless set). The parser reads it as a name; the model
	// looks the engine up and lets it refuse what it cannot serve.
	Engine string
	// Package says where the generated Go code goes.
	Package Package
	// Migrations is the directory for the goose migration files.
	Migrations string
	// Queries is the directory for the sqlc query files, the schema file
	// sqlc reads and sqlc.yaml.
	Queries string
	// Schema is the schema holding the queue tables, on an engine with
	// schemas inside a database (PostgreSQL's public by default; on SQL
	// Server the default stands for dbo); MySQL has none and refuses the key.
	Schema string
	// MigrationsTable is the goose version table recording which of the
	// spec's migrations a database has applied, in Schema.
	MigrationsTable string
	// Base is the parent table that inheriting queues are created from.
	Base Base
	// Queues are the declared queues, in the order of the file.
	Queues []*Queue
	// SQLServer are settings only engine sqlserver reads (key sqlserver,
	// refused with another engine).
	SQLServer SQLServer

	// keys maps each key the file sets, as a dotted path
	// ("queues[email].notify"), to its position.
	keys map[string]Pos
}

// Pos returns the position of a key the file sets (a dotted path such as
// "engine" or "queues[email].notify"), or, when the file does not set it,
// the position of the nearest enclosing key that it does set.
func (s *Spec) Pos(key string) Pos {
	for key != "" {
		if p, ok := s.keys[key]; ok {
			return p
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return Pos{Line: 1, Column: 1}
}

// Has reports whether the file sets key (a dotted path, see Pos).
func (s *Spec) Has(key string) bool {
	_, ok := s.keys[key]
	return ok
}

// ErrorAt returns an error at key's position (see Pos).
func (s *Spec) ErrorAt(key, format string, args ...any) *Error {
	p := s.Pos(key)
	return &Error{File: s.File, Line: p.Line, Column: p.Column, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// SQLServer are the spec's settings for engine sqlserver.
type SQLServer struct {
	// OnlineIndex builds the indexes that later migrations add to tables
	// holding rows WITH (ONLINE = ON), which does not block pushes and
	// claims but needs Enterprise edition or Azure SQL; false builds them
	// offline, as Standard and Express can. True unless set.
	OnlineIndex bool
}

// Package is the Go package that receives the accessors; sqlc's code goes
// to its subpackage <name>db.
type Package struct {
	Name string // Go package name, e.g. "jobs"
	Dir  string // directory, e.g. "internal/jobs"
	// ImportPath is the package's Go import path, e.g.
	// "example.com/app/internal/jobs"; "" unless set, when it is derived
	// from the go.mod above Dir.
	ImportPath string
}

// Base is the shared parent table of the base_queue + INHERITS design.
type Base struct {
	// Table is the parent table's name; "base_queue" unless set.
	Table string
	// Columns are extra columns every inheriting queue gets, after the
	// queue bookkeeping columns.
	Columns []*Column
}

// Mode is how a job is delivered to a worker.
type Mode string

const (
	// ModeLease claims a job with a committed UPDATE that records the holder
	// and a lease expiry; work happens outside any transaction and an
	// expired lease makes the job claimable again.
	ModeLease Mode = "lease"
	// ModeTransaction claims a job with SELECT … FOR UPDATE SKIP LOCKED
	// inside the caller's transaction; a rollback returns the job.
	ModeTransaction Mode = "transaction"
)

// Lock is what a claim does when the row it wants is locked by another
// transaction.
type Lock string

const (
	// LockSkipLocked passes over locked rows (FOR UPDATE SKIP LOCKED).
	LockSkipLocked Lock = "skip_locked"
	// LockNowait fails the claim at once (FOR UPDATE NOWAIT).
	LockNowait Lock = "nowait"
)

// OnSuccess is what completing a job does to its row.
type OnSuccess string

const (
	// OnSuccessDelete deletes the row.
	OnSuccessDelete OnSuccess = "delete"
	// OnSuccessKeep keeps the row in state succeeded until retention
	// removes it.
	OnSuccessKeep OnSuccess = "keep"
	// OnSuccessArchive moves the row, in state succeeded, to the queue's
	// archive table, partitioned by day of finished_at, whose partitions
	// retention drops whole (PostgreSQL).
	OnSuccessArchive OnSuccess = "archive"
)

// ArchiveSuffix names a queue's archive table after its table; its daily
// partitions add "_pYYYYMMDD".
const ArchiveSuffix = "_archive"

// RateLogSuffix names a queue's rate log after its table: <table>_rate,
// on every engine.
const RateLogSuffix = "_rate"

// ArchivePartitionSuffixLen is the length of a daily partition's suffix,
// "_pYYYYMMDD".
const ArchivePartitionSuffixLen = len("_p20060102")

// Queue is one declared queue.
type Queue struct {
	Pos Pos
	// Name is the queue's name; it names the Go type and the queries.
	Name string
	// RenamedFrom is the queue's previous name, when it was renamed: the
	// next migration renames its table instead of dropping and creating.
	RenamedFrom string
	// Table is the queue's table; "<name>_queue" unless set.
	Table string
	// Inherits is true when the table is created INHERITS (base table);
	// false makes a standalone table with the same bookkeeping columns.
	Inherits bool
	// Mode is the delivery mode.
	Mode Mode
	// Lock is the claim's lock behaviour.
	Lock Lock
	// Lease is how long a claim holds a job in lease mode.
	Lease time.Duration
	// MaxAttempts is how many times a job is tried before it is dead.
	MaxAttempts int
	// Backoff is the retry delay after a failed attempt.
	Backoff Backoff
	// Priority orders claims by priority (highest first) before run_after.
	Priority bool
	// FairBy is the payload column whose values claims take jobs from in
	// turn (round-robin), so that one value's backlog cannot hold back the
	// others' jobs; "" for one order across the queue.
	FairBy string
	// Limits caps how many of the queue's jobs run at once, across every
	// worker and node; zero values set no cap.
	Limits Limits
	// Rate caps how many of the queue's jobs are claimed per period,
	// across every worker and node; unset when Rate.Limit is 0.
	Rate Rate
	// Backlog keeps the queue's jobs in a backlog table until a scheduler
	// step moves them, fairly by FairBy, into the queue table that workers
	// claim from; unset when Backlog.Batch is 0.
	Backlog Backlog
	// Unique enables a unique key: among unfinished jobs of this queue, at
	// most one has a given key.
	Unique bool
	// Notify makes every push NOTIFY the queue's channel, so listening
	// workers wake at once instead of at their next poll.
	Notify bool
	// OnSuccess is what completing a job does.
	OnSuccess OnSuccess
	// Retention is how long finished jobs are kept.
	Retention Retention
	// Payload is the job's typed payload.
	Payload Payload
	// Periodic are jobs pushed on a schedule.
	Periodic []*Periodic
	// Distribute spreads the queue's table over the nodes of a Citus
	// cluster, in Buckets buckets (PostgreSQL only); unset when
	// Distribute.Buckets is 0.
	Distribute Distribute
}

// Distribute makes a queue a Citus distributed table: each job goes to one
// of Buckets buckets (its unique key's hash, or the pushing accessor's
// round robin), the table is distributed by its bucket column, and every
// statement on one job or one bucket runs on the one shard holding it.
type Distribute struct {
	// Buckets is how many buckets the queue's jobs are spread over, from
	// 1 to MaxBuckets; 0 when the queue is not distributed.
	Buckets int
}

// Set reports whether the queue is distributed.
func (d Distribute) Set() bool { return d.Buckets > 0 }

// MaxBuckets is the most buckets a distributed queue may have: a job's id
// carries its bucket as id % MaxBuckets (id = sequence value × MaxBuckets
// + bucket), so that any statement on a job by id knows its shard.
const MaxBuckets = 1024

// BucketColumn is a distributed queue's distribution column, beside the
// bookkeeping columns: its payload may not declare one of that name.
const BucketColumn = "bucket"

// Limits are a queue's concurrency limits, held by the database: a claim
// counts the jobs that hold a lease and takes no more than the limits
// leave room for.
type Limits struct {
	// PerKey is the most jobs with one value of the FairBy column that run
	// at once; 0 for no limit.
	PerKey int
	// Global is the most jobs of the queue that run at once; 0 for no
	// limit.
	Global int
}

// Set reports whether any limit is set.
func (l Limits) Set() bool { return l.PerKey > 0 || l.Global > 0 }

// Rate is a queue's rate limit, held by the database: every claim counts
// the claims of the last Per in the queue's rate log, under the queue's
// claim lock, and takes no more than Limit leaves room for.
type Rate struct {
	// Limit is the most jobs claimed in any window of length Per.
	Limit int
	// Per is the window.
	Per time.Duration
	// By, when set, is the FairBy column: the limit holds per value
	// instead of for the queue.
	By string
}

// Set reports whether the queue has a rate limit.
func (r Rate) Set() bool { return r.Limit > 0 }

// Backlog is a queue's two-stage scheduling: pushes go to the queue's
// backlog table, and a scheduler step moves due jobs from it into the
// queue table in batches, taking each FairBy value's share in turn, so
// that claims are ordered reads of a table that stays small.
type Backlog struct {
	// Batch is how many due jobs the queue table is topped up to by one
	// scheduler step.
	Batch int
}

// Set reports whether the queue has a backlog table.
func (b Backlog) Set() bool { return b.Batch > 0 }

// DefaultBacklogBatch is a backlog's batch when the spec gives none.
const DefaultBacklogBatch = 5000

// BacklogSuffix names a queue table's backlog: <table>_backlog.
const BacklogSuffix = "_backlog"

// Periodic is a job pushed on a schedule with a fixed payload, once per
// tick however many nodes run a scheduler.
type Periodic struct {
	Pos  Pos
	Name string
	// Every or Cron: exactly one is set.
	Every time.Duration
	Cron  string
	// Payload is the fixed payload: field or column name → value, as
	// written in the spec (YAML scalars), or, for a go_type payload, the
	// JSON document of it.
	Payload map[string]string
	// JSON is the payload as a JSON document (go_type payloads).
	JSON string

	node *yaml.Node // the payload, checked against the queue's payload
	key  string
}

// Backoff is an exponential retry delay: Min × Factor^(attempt-1), capped at
// Max, with ±Jitter (a fraction) of randomness.
type Backoff struct {
	Min, Max time.Duration
	Factor   float64
	Jitter   float64
}

// Retention is how long finished jobs are kept before maintenance deletes
// them. Zero keeps them forever.
type Retention struct {
	Succeeded time.Duration
	Dead      time.Duration
}

// Payload is either table columns or one jsonb column.
type Payload struct {
	// Columns are the payload as real columns, in order. Empty when JSON
	// is set.
	Columns []*Column
	// JSON is the payload as one jsonb column; nil when Columns is used.
	JSON *JSONPayload
}

// JSONPayload is a payload stored in one jsonb column and decoded into a Go
// type: a named type from another package, or a struct generated from
// Fields.
type JSONPayload struct {
	// Column is the jsonb column's name; "payload" unless set.
	Column string
	// GoType names an existing Go type; nil when Fields is used.
	GoType *GoType
	// Fields declares the struct queuegen generates; empty with GoType.
	Fields []*Column
}

// GoType is a Go type in another package.
type GoType struct {
	Import string // import path, e.g. "example.com/app/mail"
	Type   string // type name, e.g. "Message"
}

// Column is a payload, base or JSON field declaration.
type Column struct {
	Pos      Pos
	Name     string
	Type     Type
	Nullable bool
	// Default is the column's default value as written in the spec,
	// checked against the type; nil for none. Each engine writes it as a
	// literal of its own.
	Default *string
	// DefaultSQL is the column's default as an SQL expression, one of
	// DefaultExpressions; "" for none. At most one of Default and
	// DefaultSQL is set.
	DefaultSQL string
	// RenamedFrom is the column's previous name, when it was renamed.
	RenamedFrom string
}

// HasDefault reports whether the column has a default.
func (c *Column) HasDefault() bool { return c.Default != nil || c.DefaultSQL != "" }

// DefaultExpressions are the SQL expressions a column may take as its
// default (default_sql:), by the types they are defaults of. Each engine
// writes them in its own dialect.
var DefaultExpressions = map[string][]string{
	"now()":             {"timestamptz"},
	"current_timestamp": {"timestamptz"},
	"clock_timestamp()": {"timestamptz"},
	"current_date":      {"date"},
	"gen_random_uuid()": {"uuid"},
}

// Type is a supported PostgreSQL type.
type Type struct {
	// Name is the canonical base type: text, varchar, smallint, integer,
	// bigint, boolean, numeric, real, double precision, uuid, timestamptz,
	// date, jsonb or bytea.
	Name string
	// Mods are the type modifiers: varchar's length, numeric's precision
	// and scale.
	Mods []int
	// Array is true for a one-dimensional array of Name.
	Array bool
}

// SQL renders the type as it appears in DDL, e.g. "varchar(200)[]".
func (t Type) SQL() string {
	var b strings.Builder
	b.WriteString(t.Name)
	if len(t.Mods) > 0 {
		b.WriteByte('(')
		for i, m := range t.Mods {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprint(&b, m)
		}
		b.WriteByte(')')
	}
	if t.Array {
		b.WriteString("[]")
	}
	return b.String()
}

// Pos is a position in the spec file.
type Pos struct {
	Line, Column int
}

// QueueColumns are the bookkeeping columns every queue table has. Payload
// and base columns may not reuse these names. The model package defines
// their types.
var QueueColumns = []string{
	"id", "state", "attempt", "max_attempts", "priority", "run_after",
	"created_at", "attempted_at", "finished_at", "locked_by", "locked_until",
	"errors", "failures", "unique_key",
}

// QueryParams are the names the generated queries use for their own
// parameters beside the payload columns; a payload column may not take one.
var QueryParams = []string{"now", "delay"}
