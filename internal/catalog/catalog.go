// Package catalog describes the database objects that a spec's migrations
// create, as one database engine spells them: tables with their columns,
// keys, checks, indexes and storage options, functions, and the queues
// registered in the registry table.
//
// The model builds a Catalog from the spec (asking the engine for every
// type and index), the state file records the Catalog the emitted
// migrations produce, package evolve diffs two of them, and the engine's
// DDL builder writes each difference as SQL. Comments in a Catalog are for
// the DDL only; the state file does not record them.
package catalog

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Catalog is every object the migrations of one spec create, in the order
// they are created.
type Catalog struct {
	// Schema holds every table (PostgreSQL schema, SQL Server schema, or
	// MySQL database, where the engine has no schemas).
	Schema string
	// Registry is the queue registry table.
	Registry *Table
	// Periodic is the periodic-ticks table; nil when no queue has
	// periodic jobs.
	Periodic *Table
	// Nodes is the table of worker processes (nodes) and their
	// heartbeats; nil in the state of migrations emitted before it
	// existed.
	Nodes *Table
	// Functions are the functions the migrations create (the notify
	// trigger function), by name.
	Functions []string
	// Base is the INHERITS parent; nil when no queue inherits it.
	Base *Table
	// Queues are the queue tables with their registry rows, in spec order.
	Queues []*Queue
	// Reference is true when queuegen's own tables (registry, nodes,
	// periodic ticks) are reference tables, copied to every node of a
	// cluster: when any queue table is distributed.
	Reference bool
}

// Queue is a queue's registry row and its table.
type Queue struct {
	Name string `yaml:"name"`
	Mode string `yaml:"mode"`
	// Table is the queue's table.
	Table *Table `yaml:"table"`
	// Archive is the table completed jobs move to (on_success: archive),
	// or nil.
	Archive *Table `yaml:"archive,omitempty"`
	// RateLog is the log of claims a rate limit counts, or nil.
	RateLog *Table `yaml:"rate_log,omitempty"`
	// Backlog is the table pushes go to and a scheduler step moves jobs
	// from into Table (an INHERITS child of Table), or nil.
	Backlog *Table `yaml:"backlog,omitempty"`
	// RenamedFrom is the queue's previous name, from the spec: a hint for
	// the differ, not part of the schema.
	RenamedFrom string `yaml:"-"`
}

// Table is one table.
type Table struct {
	Name string `yaml:"name"`
	// Comment is written above CREATE TABLE, one line per element.
	Comment []string `yaml:"-"`
	// Inherits is the parent table's name, or "".
	Inherits string    `yaml:"inherits,omitempty"`
	Columns  []*Column `yaml:"columns"`
	Checks   []*Check  `yaml:"checks,omitempty"`
	// Indexes are the primary key, unique constraints declared in the
	// table, and the indexes created after it, in that order.
	Indexes []*Index `yaml:"indexes"`
	// NotifyTrigger is the trigger that notifies on push, or "".
	NotifyTrigger string `yaml:"notify_trigger,omitempty"`
	// Options are the table's storage options (PostgreSQL's WITH (…)).
	Options []Option `yaml:"options,flow,omitempty"`
	// OptionsComment explains Options in the DDL.
	OptionsComment []string `yaml:"-"`
	// PartitionBy makes the table partitioned (PostgreSQL's PARTITION BY,
	// e.g. "RANGE (finished_at)"), with a default partition named
	// DefaultPartition; "" for a plain table.
	PartitionBy string `yaml:"partition_by,omitempty"`
	// Distribution spreads the table over the nodes of a cluster (a
	// Citus distributed table), or is nil for a table on one node.
	Distribution *Distribution `yaml:"distribution,omitempty"`
}

// Distribution is how a distributed queue table is spread over a
// cluster's nodes: by the value of Column, a bucket from 0 to Buckets-1,
// in the same shards as ColocateWith's rows of the same bucket. Its ids
// come from Sequence, on the coordinator.
type Distribution struct {
	Column  string `yaml:"column"`
	Buckets int    `yaml:"buckets"`
	// Sequence numbers the jobs (the id is a value of it times
	// spec.MaxBuckets plus the bucket); it lives on the coordinator.
	Sequence string `yaml:"sequence"`
	// ColocateWith is the distributed table whose shards this table's
	// share, or "" for the first distributed table.
	ColocateWith string `yaml:"colocate_with,omitempty"`
}

// MarshalYAML writes a distribution on one line.
func (d Distribution) MarshalYAML() (any, error) { type plain Distribution; return Flow(plain(d)) }

// DefaultPartition is the name of a partitioned table's default partition.
func (t *Table) DefaultPartition() string { return t.Name + "_default" }

// Column is a column a table declares itself (an INHERITS child's
// inherited columns are its parent's).
type Column struct {
	Name string `yaml:"name"`
	// Type is the type as the engine writes it in DDL.
	Type    string `yaml:"type"`
	NotNull bool   `yaml:"not_null,omitempty"`
	// Default is the DEFAULT expression as the engine writes it, or "".
	Default string `yaml:"default,omitempty"`
	// Comment is written beside the column in CREATE TABLE.
	Comment string `yaml:"-"`
	// RenamedFrom is the column's previous name, from the spec: a hint
	// for the differ, not part of the schema.
	RenamedFrom string `yaml:"-"`
	// JSON marks a column that holds JSON documents (a jsonb column, a
	// JSON payload), for an engine that checks them: not part of the
	// schema (a check it makes is).
	JSON bool `yaml:"-"`
	// Generated marks a column the database computes (MySQL's AS (…)
	// STORED, in Type), which an INSERT leaves out: not part of the
	// schema (Type is).
	Generated bool `yaml:"-"`
}

// Index is a primary key, a unique constraint or an index.
type Index struct {
	Name string `yaml:"name"`
	// Primary makes this the table's PRIMARY KEY constraint.
	Primary bool `yaml:"primary,omitempty"`
	Unique  bool `yaml:"unique,omitempty"`
	// Constraint declares a unique index as a UNIQUE constraint inside
	// CREATE TABLE rather than as a separate CREATE INDEX.
	Constraint bool `yaml:"constraint,omitempty"`
	// Columns are the key, e.g. "priority DESC", "run_after", "id".
	Columns []string `yaml:"columns,flow"`
	// Where is a partial (filtered) index's predicate, or "".
	Where string `yaml:"where,omitempty"`
	// Comment says which query the index serves.
	Comment string `yaml:"-"`
}

// InTable reports whether the index is declared inside CREATE TABLE.
func (i *Index) InTable() bool { return i.Primary || i.Constraint }

// SameDefinition reports whether two indexes are built the same way,
// whatever their names.
func (i *Index) SameDefinition(o *Index) bool {
	return i.Primary == o.Primary && i.Unique == o.Unique && i.Constraint == o.Constraint &&
		strings.Join(i.Columns, ",") == strings.Join(o.Columns, ",") && i.Where == o.Where
}

// Check is a CHECK constraint.
type Check struct {
	Name string `yaml:"name"`
	Expr string `yaml:"expr"`
	// NoInherit keeps the constraint off INHERITS children.
	NoInherit bool `yaml:"no_inherit,omitempty"`
}

// Option is one storage option of a table.
type Option struct {
	Name, Value string
}

// MarshalYAML writes the option as name=value.
func (o Option) MarshalYAML() (any, error) { return o.Name + "=" + o.Value, nil }

// UnmarshalYAML reads name=value.
func (o *Option) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	name, value, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("storage option %q: want name=value", s)
	}
	o.Name, o.Value = name, value
	return nil
}

// Column returns the table's own column called name, or nil.
func (t *Table) Column(name string) *Column {
	for _, c := range t.Columns {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// RowColumns are the columns of t's rows in table order: when t inherits
// (parent is its INHERITS parent), the parent's first, then its own.
func (t *Table) RowColumns(parent *Table) []*Column {
	var out []*Column
	if t.Inherits != "" && parent != nil {
		out = append(out, parent.Columns...)
	}
	return append(out, t.Columns...)
}

// PrimaryKey returns the table's primary key, or nil.
func (t *Table) PrimaryKey() *Index {
	for _, i := range t.Indexes {
		if i.Primary {
			return i
		}
	}
	return nil
}

// Clone returns a deep copy of t.
func (t *Table) Clone() *Table {
	c := *t
	c.Columns = make([]*Column, len(t.Columns))
	for i, col := range t.Columns {
		cc := *col
		c.Columns[i] = &cc
	}
	c.Checks = make([]*Check, len(t.Checks))
	for i, k := range t.Checks {
		kk := *k
		c.Checks[i] = &kk
	}
	c.Indexes = make([]*Index, len(t.Indexes))
	for i, idx := range t.Indexes {
		ii := *idx
		ii.Columns = append([]string(nil), idx.Columns...)
		c.Indexes[i] = &ii
	}
	c.Options = append([]Option(nil), t.Options...)
	if t.Distribution != nil {
		d := *t.Distribution
		c.Distribution = &d
	}
	return &c
}

// Tables lists every table of the catalog in creation order.
func (c *Catalog) Tables() []*Table {
	var out []*Table
	for _, t := range []*Table{c.Registry, c.Nodes, c.Periodic, c.Base} {
		if t != nil {
			out = append(out, t)
		}
	}
	for _, q := range c.Queues {
		out = append(out, q.Table)
		if q.Backlog != nil {
			out = append(out, q.Backlog)
		}
		if q.Archive != nil {
			out = append(out, q.Archive)
		}
		if q.RateLog != nil {
			out = append(out, q.RateLog)
		}
	}
	return out
}

// One line per column, index and check keeps the state file short and its
// diffs readable.
func (c Column) MarshalYAML() (any, error) { type plain Column; return Flow(plain(c)) }
func (c Check) MarshalYAML() (any, error)  { type plain Check; return Flow(plain(c)) }
func (i Index) MarshalYAML() (any, error)  { type plain Index; return Flow(plain(i)) }

// Flow encodes v as a YAML flow mapping ({a: 1, b: 2}).
func Flow(v any) (any, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	n.Style = yaml.FlowStyle
	return &n, nil
}
