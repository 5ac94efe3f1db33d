// Package model turns a validated spec into what the templates render: the
// tables with every column in order, the indexes each table needs, the Go
// names and types of each payload, and the output paths.
//
// Everything a template prints is decided here, so the templates stay free
// of logic and the same spec always yields the same model.
package model

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/queuegen/queuegen/internal/spec"
)

// Model is everything generated from one spec.
type Model struct {
	Spec *spec.Spec
	// Package is the Go package name of the generated code.
	Package string
	// GoDir, MigrationsDir and QueriesDir are output directories relative
	// to the spec file's directory.
	GoDir, MigrationsDir, QueriesDir string
	// Schema is the PostgreSQL schema; Qualify is true when it is not
	// public, and every table name is then written schema.table.
	Schema  string
	Qualify bool
	// Registry is the qualified name of the queue registry table.
	Registry string
	// Base is the parent table; nil when no queue inherits it.
	Base *Table
	// Periodic is the qualified name of the periodic-ticks table, or ""
	// when no queue has periodic jobs.
	Periodic string
	// NotifyFunction is the qualified name of the trigger function that
	// sends push notifications, or "" when no queue notifies.
	NotifyFunction string
	// Queues in spec order.
	Queues []*Queue
}

// Table is one table the migrations create.
type Table struct {
	// Name is the table's name; QName is the name as written in SQL
	// (schema-qualified when the schema is not public).
	Name, QName string
	// Parent is the base table for an inheriting queue, else nil.
	Parent *Table
	// Own are the columns the CREATE TABLE statement lists itself: all of
	// them for the base and standalone tables, the payload for children.
	Own []*Column
	// All are the columns the table ends up with, in order.
	All []*Column
	// Indexes are created after the table, PK first.
	Indexes []*Index
	// Checks are the table's CHECK constraints (not inherited ones).
	Checks []Check
	// Options are the table's storage parameters (WITH (…)), in order.
	Options []Option
	// NotifyTrigger is the name of the trigger that notifies on push, and
	// NotifyFunction the function it runs; "" when the queue does not
	// notify.
	NotifyTrigger, NotifyFunction string
}

// Column is one table column.
type Column struct {
	Name string
	// SQLType is the type as written in DDL, e.g. "varchar(200)".
	SQLType string
	NotNull bool
	// Default is the DEFAULT expression, or "".
	Default string
	// Comment explains a bookkeeping column in the DDL.
	Comment string
	// GoName and GoType are the field sqlc generates for the column.
	GoName, GoType string
	// Payload is true for payload columns.
	Payload bool
	// RenamedFrom is the column's previous name, from the spec.
	RenamedFrom string
}

// EmptyIfNil is true for a NOT NULL column whose Go type is a slice: pgx
// sends a nil slice as NULL, so the accessor sends an empty one instead.
func (c *Column) EmptyIfNil() bool {
	return c.NotNull && strings.HasPrefix(c.GoType, "[]")
}

// Option is one storage parameter of a table.
type Option struct {
	Name, Value string
}

// QueueTableOptions are the storage parameters of every queue table. A
// queue table is small but churns: each job is inserted, updated two or
// three times, then deleted or finished, so it makes dead tuples as fast
// as it works jobs.
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
var QueueTableOptions = []Option{
	{"fillfactor", "100"},
	{"autovacuum_vacuum_scale_factor", "0"},
	{"autovacuum_vacuum_threshold", "1000"},
	{"autovacuum_vacuum_cost_delay", "0"},
	{"autovacuum_analyze_scale_factor", "0"},
	{"autovacuum_analyze_threshold", "1000"},
}

// Check is a named CHECK constraint.
type Check struct {
	Name, Expr string
	// NoInherit keeps the constraint off the children.
	NoInherit bool
}

// Index is one index or primary key.
type Index struct {
	Name string
	// Primary makes this the table's PRIMARY KEY constraint.
	Primary bool
	Unique  bool
	// Columns are the key, e.g. "priority DESC", "run_after", "id".
	Columns []string
	// Where is the partial index predicate, or "".
	Where string
	// Comment says which query the index serves.
	Comment string
}

// Queue is one queue with everything its SQL and Go need.
type Queue struct {
	Spec *spec.Queue
	Name string
	// GoName is the queue's Go name, e.g. "Email" for queue email.
	GoName string
	Table  *Table
	// Lease is true in lease mode, false in transaction mode.
	Lease bool
	// LockClause is "FOR UPDATE SKIP LOCKED" or "FOR UPDATE NOWAIT".
	LockClause string
	// ClaimOrder is the claim's ORDER BY list, matching the claim index.
	ClaimOrder string
	// ClaimIndex is the partial index the claim query uses.
	ClaimIndex *Index
	// Delete is true when completing deletes the row.
	Delete bool
	Unique bool
	// NotifyChannel is the channel pushes notify, or "".
	NotifyChannel string

	// Payload: exactly one of Columns or JSON is set.
	PayloadColumns []*Column
	JSON           *JSONPayload
	// Inputs are the columns Push sets from the payload: the payload
	// columns (after the base table's extra columns, for an inheriting
	// queue), or the jsonb column.
	Inputs []*Column
	// PayloadType is the Go type of the payload, e.g. "EmailPayload" or
	// "mail.Message".
	PayloadType string
	// Imports are the extra imports of the accessor file, sorted.
	Imports []string

	// File names (base names) of this queue's generated files.
	QueriesFile, AccessorFile string
	// RowType is the Go name sqlc gives the table's row struct.
	RowType string

	RetainSucceededGo, RetainDeadGo string // Go expressions of the retentions
	// Periodic are the queue's periodic jobs.
	Periodic        []*Periodic
	LeaseSeconds    int64
	LeaseGo         string // Go expression for the lease, e.g. "5 * time.Minute"
	MaxAttempts     int
	BackoffGo       string // Go composite literal of queue.Backoff
	Retention       spec.Retention
	ModeDescription string
}

// Periodic is a periodic job, with its schedule and payload as Go
// expressions.
type Periodic struct {
	Name, ScheduleGo, PayloadGo string
	// JSON is the payload document of a go_type queue, decoded at start.
	JSON string
}

// JSONPayload is a payload kept in one jsonb column.
type JSONPayload struct {
	Column *Column
	// Fields are the generated struct's fields; empty for a named type.
	Fields []*Field
}

// Field is a field of a generated JSON payload struct.
type Field struct {
	Name, GoName, GoType, Tag string
}

// Build makes the model of a validated spec.
func Build(s *spec.Spec) (*Model, error) {
	m := &Model{
		Spec:          s,
		Package:       s.Package.Name,
		GoDir:         s.Package.Dir,
		MigrationsDir: s.Migrations,
		QueriesDir:    s.Queries,
		Schema:        s.Schema,
		Qualify:       s.Schema != spec.DefaultSchema,
	}
	m.Registry = m.qualify("queuegen_queues")
	inherits := false
	for _, q := range s.Queues {
		inherits = inherits || q.Inherits
	}
	if inherits {
		m.Base = m.baseTable(s.Base)
	}
	owner := map[string]*Queue{}
	for _, name := range []string{"BaseRow", "QueueRegistryRow", "PeriodicTickRow", "Queries", "New", "DBTX"} {
		owner[name] = nil
	}
	var errs spec.Errors
	for _, sq := range s.Queues {
		if sq.Notify {
			m.NotifyFunction = m.qualify(NotifyFunction)
		}
	}
	for _, sq := range s.Queues {
		q, err := m.queue(sq)
		if err != nil {
			return nil, err
		}
		m.Queues = append(m.Queues, q)
		for _, name := range GoNames(q.GoName) {
			prev, taken := owner[name]
			if !taken {
				owner[name] = q
				continue
			}
			what := "queuegen's own code"
			if prev != nil {
				what = fmt.Sprintf("queue %q", prev.Name)
			}
			errs = append(errs, &spec.Error{File: s.File, Line: sq.Pos.Line, Column: sq.Pos.Column, Key: "queues[" + sq.Name + "].name",
				Msg: fmt.Sprintf("the generated Go name %s is also generated for %s; rename the queue", name, what)})
			break
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return m, nil
}

// GoNames are the package-level Go names generated for a queue whose Go
// name is g: the accessor's types and constants, and sqlc's query methods
// with their parameter and row types.
func GoNames(g string) []string {
	names := []string{g + "Queue", g + "Payload", g + "Row", g + "MaxAttempts", g + "Lease", g + "Backoff", g + "RetainSucceeded", g + "RetainDead"}
	for _, op := range []string{"Push", "PushMany", "Claim", "Complete", "CompleteMany", "Fail", "FailMany", "Snooze", "Discard", "Extend", "Release", "ReleaseNode", "Reap", "Get", "Paused", "SetPaused", "Depth", "Purge", "AdvanceTick"} {
		names = append(names, op+g, op+g+"Params", op+g+"Row")
	}
	return append(names, "PushMany"+g+"At", "PushMany"+g+"AtParams")
}

func (m *Model) qualify(name string) string {
	if m.Qualify {
		return m.Schema + "." + name
	}
	return name
}

// bookkeeping are the columns every queue table has, in order. idDefault
// is the id column's type and default: the base table's bigserial is
// inherited by children as a default on the shared sequence, so ids are
// unique across every queue of the base table.
func bookkeeping() []*Column {
	return []*Column{
		{Name: "id", SQLType: "bigserial", NotNull: true, Comment: "job id, from one sequence shared by every child table"},
		{Name: "state", SQLType: "text", NotNull: true, Default: "'available'", Comment: "available, running (leased), succeeded or dead"},
		{Name: "attempt", SQLType: "integer", NotNull: true, Default: "0", Comment: "claims so far; with id, the fencing token of the current attempt"},
		{Name: "max_attempts", SQLType: "integer", NotNull: true, Comment: "after this many failed attempts the job is dead"},
		{Name: "priority", SQLType: "smallint", NotNull: true, Default: "0", Comment: "higher is claimed first where the queue orders by priority"},
		{Name: "run_after", SQLType: "timestamptz", NotNull: true, Default: "now()", Comment: "not claimed before this time"},
		{Name: "created_at", SQLType: "timestamptz", NotNull: true, Default: "now()"},
		{Name: "attempted_at", SQLType: "timestamptz", Comment: "when the current attempt was claimed"},
		{Name: "finished_at", SQLType: "timestamptz", Comment: "when the job succeeded or died; retention counts from here"},
		{Name: "locked_by", SQLType: "text", Comment: "lease mode: the node holding the job (seed 001's lock_key)"},
		{Name: "locked_until", SQLType: "timestamptz", Comment: "lease mode: the lease expiry; after it the job can be claimed again"},
		{Name: "errors", SQLType: "text[]", NotNull: true, Default: "'{}'", Comment: "one entry per failed attempt, oldest first"},
		{Name: "unique_key", SQLType: "text", Comment: "dedupe key among unfinished jobs, where the queue has one"},
	}
}

var stateCheck = "state IN ('available', 'running', 'succeeded', 'dead')"

func (m *Model) baseTable(b spec.Base) *Table {
	t := &Table{Name: b.Table, QName: m.qualify(b.Table)}
	t.Own = bookkeeping()
	for _, c := range b.Columns {
		t.Own = append(t.Own, column(c, false))
	}
	for _, c := range t.Own {
		goField(c)
	}
	t.All = t.Own
	t.Checks = []Check{
		{Name: b.Table + "_state_check", Expr: stateCheck},
		{Name: b.Table + "_no_rows", Expr: "false", NoInherit: true},
	}
	t.Indexes = []*Index{{Name: b.Table + "_pkey", Primary: true, Columns: []string{"id"}}}
	return t
}

func column(c *spec.Column, payload bool) *Column {
	return &Column{Name: c.Name, SQLType: c.Type.SQL(), NotNull: !c.Nullable, Default: c.Default, Payload: payload, GoType: goType(c.Type, c.Nullable), RenamedFrom: c.RenamedFrom}
}

// goField fills in the Go name and, for bookkeeping columns, the Go type.
func goField(c *Column) {
	c.GoName = spec.GoName(c.Name)
	if c.GoType != "" {
		return
	}
	switch c.Name {
	case "id":
		c.GoType = "int64"
	case "state", "locked_by", "unique_key":
		c.GoType = "string"
		if !c.NotNull {
			c.GoType = "*string"
		}
	case "attempt", "max_attempts":
		c.GoType = "int32"
	case "priority":
		c.GoType = "int16"
	case "run_after", "created_at":
		c.GoType = "time.Time"
	case "attempted_at", "finished_at", "locked_until":
		c.GoType = "*time.Time"
	case "errors":
		c.GoType = "[]string"
	}
}

// goType is the Go type sqlc (pgx/v5, emit_pointers_for_null_types, and the
// time overrides in the generated sqlc.yaml) gives a column of type t.
func goType(t spec.Type, nullable bool) string {
	var inner string
	pointer := nullable
	switch t.Name {
	case "text", "varchar":
		inner = "string"
	case "smallint":
		inner = "int16"
	case "integer":
		inner = "int32"
	case "bigint":
		inner = "int64"
	case "boolean":
		inner = "bool"
	case "real":
		inner = "float32"
	case "double precision":
		inner = "float64"
	case "numeric":
		inner, pointer = "pgtype.Numeric", false
	case "uuid":
		inner, pointer = "pgtype.UUID", false
	case "timestamptz", "date":
		inner = "time.Time"
	case "jsonb", "bytea":
		inner, pointer = "[]byte", false
	default:
		panic("model: unhandled type " + t.Name)
	}
	if t.Array {
		// sqlc maps a NULL array to a nil slice, never to pointer elements.
		return "[]" + strings.TrimPrefix(inner, "*")
	}
	if pointer {
		inner = "*" + inner
	}
	return inner
}

// jsonGoType is the Go type of a field in a generated JSON payload struct.
func jsonGoType(t spec.Type, nullable bool) string {
	var inner string
	switch t.Name {
	case "text", "varchar", "uuid", "date":
		inner = "string"
	case "smallint":
		inner = "int16"
	case "integer":
		inner = "int32"
	case "bigint":
		inner = "int64"
	case "boolean":
		inner = "bool"
	case "real":
		inner = "float32"
	case "double precision":
		inner = "float64"
	case "numeric":
		inner = "json.Number"
	case "timestamptz":
		inner = "time.Time"
	case "jsonb":
		return "json.RawMessage"
	case "bytea":
		return "[]byte"
	default:
		panic("model: unhandled type " + t.Name)
	}
	if t.Array {
		return "[]" + inner
	}
	if nullable {
		return "*" + inner
	}
	return inner
}

func (m *Model) queue(sq *spec.Queue) (*Queue, error) {
	q := &Queue{
		Spec:              sq,
		Name:              sq.Name,
		GoName:            spec.GoName(sq.Name),
		Lease:             sq.Mode == spec.ModeLease,
		Delete:            sq.OnSuccess == spec.OnSuccessDelete,
		Unique:            sq.Unique,
		MaxAttempts:       sq.MaxAttempts,
		Retention:         sq.Retention,
		QueriesFile:       sq.Name + ".sql",
		AccessorFile:      sq.Name + "_queue.go",
		LeaseSeconds:      int64(sq.Lease / time.Second),
		LeaseGo:           goDuration(sq.Lease),
		RetainSucceededGo: goDuration(sq.Retention.Succeeded),
		RetainDeadGo:      goDuration(sq.Retention.Dead),
		BackoffGo: fmt.Sprintf("queue.Backoff{Min: %s, Max: %s, Factor: %s, Jitter: %s}",
			goDuration(sq.Backoff.Min), goDuration(sq.Backoff.Max), goFloat(sq.Backoff.Factor), goFloat(sq.Backoff.Jitter)),
	}
	q.LockClause = "FOR UPDATE SKIP LOCKED"
	if sq.Lock == spec.LockNowait {
		q.LockClause = "FOR UPDATE NOWAIT"
	}
	q.ModeDescription = "lease mode: a claim is committed at once and holds the job until its lease expires"
	if !q.Lease {
		q.ModeDescription = "transaction mode: a claim holds the job by row lock until the caller's transaction ends"
	}

	t := &Table{Name: sq.Table, QName: m.qualify(sq.Table), Options: QueueTableOptions}
	q.Table = t
	q.RowType = q.GoName + "Row"
	var payload []*Column
	if j := sq.Payload.JSON; j != nil {
		c := &Column{Name: j.Column, SQLType: "jsonb", NotNull: true, GoType: "[]byte", Payload: true, Comment: "the payload, encoded as JSON"}
		payload = []*Column{c}
		q.JSON = &JSONPayload{Column: c}
		if g := j.GoType; g != nil {
			q.PayloadType = path.Base(g.Import) + "." + g.Type
			q.Imports = append(q.Imports, g.Import)
		} else {
			q.PayloadType = q.GoName + "Payload"
			for _, f := range j.Fields {
				tag := f.Name
				if f.Nullable {
					tag += ",omitempty"
				}
				q.JSON.Fields = append(q.JSON.Fields, &Field{Name: f.Name, GoName: spec.GoName(f.Name), GoType: jsonGoType(f.Type, f.Nullable), Tag: fmt.Sprintf("`json:%q`", tag)})
			}
		}
	} else {
		q.PayloadType = q.GoName + "Payload"
		for _, c := range sq.Payload.Columns {
			payload = append(payload, column(c, true))
		}
		q.PayloadColumns = payload
		if sq.Inherits {
			q.PayloadColumns = append(append([]*Column{}, m.Base.Own[len(bookkeeping()):]...), payload...)
		}
	}
	q.Inputs = payload
	if q.JSON == nil {
		q.Inputs = q.PayloadColumns
	}
	for _, c := range payload {
		goField(c)
	}

	if sq.Inherits {
		t.Parent = m.Base
		t.Own = payload
		t.All = append(append([]*Column{}, m.Base.All...), payload...)
	} else {
		t.Own = bookkeeping()
		t.Own[0].Comment = "job id"
		for _, c := range t.Own {
			goField(c)
		}
		t.Own = append(t.Own, payload...)
		t.All = t.Own
		t.Checks = []Check{{Name: sq.Table + "_state_check", Expr: stateCheck}}
	}

	// Indexes. PostgreSQL gives children none of the parent's, so each
	// table gets its own (the ground truth the seeds leave out).
	t.Indexes = append(t.Indexes, &Index{Name: sq.Table + "_pkey", Primary: true, Columns: []string{"id"}})
	key := []string{"run_after", "id"}
	q.ClaimOrder = "run_after, id"
	if sq.Priority {
		key = append([]string{"priority DESC"}, key...)
		q.ClaimOrder = "priority DESC, run_after, id"
	}
	q.ClaimIndex = &Index{Name: sq.Table + "_claim_idx", Columns: key, Where: "state = 'available'",
		Comment: "Serves the claim: its predicate and key are the claim query's WHERE and ORDER BY, so a claim reads the first rows of this index and stops."}
	t.Indexes = append(t.Indexes, q.ClaimIndex)
	if q.Lease {
		// The predicate is locked_until IS NOT NULL (true exactly while a job
		// is leased), not state = 'running': the planner would otherwise take
		// this index for the running rows of a fenced complete or fail and
		// compare each with every id of the batch.
		t.Indexes = append(t.Indexes, &Index{Name: sq.Table + "_lease_idx", Columns: []string{"locked_until"}, Where: "locked_until IS NOT NULL",
			Comment: "Finds leases that expired (claimed again, or reaped on their last attempt)."})
	}
	if sq.Unique {
		t.Indexes = append(t.Indexes, &Index{Name: sq.Table + "_unique_key_idx", Unique: true, Columns: []string{"unique_key"}, Where: UniqueWhere,
			Comment: "At most one unfinished job per unique key; push uses it with ON CONFLICT DO NOTHING."})
	}
	if sq.Notify {
		q.NotifyChannel = "queuegen_" + sq.Table
		t.NotifyTrigger, t.NotifyFunction = sq.Table+"_notify", m.NotifyFunction
	}
	t.Indexes = append(t.Indexes, &Index{Name: sq.Table + "_finished_idx", Columns: []string{"finished_at"}, Where: "state IN ('succeeded', 'dead')",
		Comment: "Finds finished jobs for retention and for listing dead jobs."})

	for _, pj := range sq.Periodic {
		q.Periodic = append(q.Periodic, periodic(q, sq, pj))
	}
	if len(q.Periodic) > 0 {
		m.Periodic = m.qualify(PeriodicTable)
	}

	imports := map[string]bool{}
	for _, c := range q.Inputs {
		switch {
		case strings.Contains(c.GoType, "pgtype."):
			imports["github.com/jackc/pgx/v5/pgtype"] = true
		}
	}
	if q.JSON != nil {
		imports["encoding/json"] = true
	}
	for _, imp := range q.Imports {
		imports[imp] = true
	}
	q.Imports = q.Imports[:0]
	for imp := range imports {
		q.Imports = append(q.Imports, imp)
	}
	sort.Strings(q.Imports)
	return q, nil
}

// PeriodicTable records the last tick of each periodic job.
const PeriodicTable = "queuegen_periodic"

// periodic builds a periodic job's Go expressions; the spec has checked
// its values.
func periodic(q *Queue, sq *spec.Queue, pj *spec.Periodic) *Periodic {
	out := &Periodic{Name: pj.Name}
	if pj.Cron != "" {
		out.ScheduleGo = fmt.Sprintf("queue.MustParseCron(%q)", pj.Cron)
	} else {
		out.ScheduleGo = fmt.Sprintf("queue.Every(%s)", goDuration(pj.Every))
	}
	if sq.Payload.JSON != nil && sq.Payload.JSON.GoType != nil {
		out.JSON = pj.JSON
		return out
	}
	type field struct{ name, goName, goType string }
	var fields []field
	if q.JSON != nil {
		for _, f := range q.JSON.Fields {
			fields = append(fields, field{f.Name, f.GoName, f.GoType})
		}
	} else {
		for _, c := range q.PayloadColumns {
			fields = append(fields, field{c.Name, c.GoName, c.GoType})
		}
	}
	var parts []string
	for _, f := range fields {
		v, ok := pj.Payload[f.name]
		if !ok {
			continue
		}
		lit := v
		base := strings.TrimPrefix(f.goType, "*")
		if base == "string" {
			lit = fmt.Sprintf("%q", v)
		} else if base != "bool" {
			lit = base + "(" + v + ")"
		}
		if strings.HasPrefix(f.goType, "*") {
			lit = "queue.Ptr(" + lit + ")"
		}
		parts = append(parts, f.goName+": "+lit)
	}
	out.PayloadGo = q.PayloadType + "{" + strings.Join(parts, ", ") + "}"
	return out
}

// NotifyFunction is the trigger function's name: it notifies channel
// queuegen_<table> (from TG_TABLE_NAME, so a renamed table needs nothing).
const NotifyFunction = "queuegen_notify"

// UniqueWhere is the predicate of the unique-key index and of push's ON
// CONFLICT clause; they must match for PostgreSQL to infer the index.
const UniqueWhere = "unique_key IS NOT NULL AND state IN ('available', 'running')"

// goDuration renders d as a Go constant expression, e.g. 5 * time.Minute.
func goDuration(d time.Duration) string {
	units := []struct {
		d    time.Duration
		name string
	}{{time.Hour, "time.Hour"}, {time.Minute, "time.Minute"}, {time.Second, "time.Second"}, {time.Millisecond, "time.Millisecond"}}
	for _, u := range units {
		if d%u.d == 0 {
			n := d / u.d
			if n == 1 {
				return u.name
			}
			return fmt.Sprintf("%d * %s", n, u.name)
		}
	}
	return fmt.Sprintf("%d", int64(d))
}

func goFloat(f float64) string {
	return fmt.Sprintf("%g", f)
}
