// Package model turns a validated spec into everything the later stages
// print: the catalog of tables the migrations create (decided by the
// spec's database engine), each queue's delivery decisions, the Go names
// and types of each payload, and the output paths.
//
// Every decision is made here, once. Package evolve diffs the catalog,
// package render executes templates over the model, and neither reads the
// spec: the model keeps no reference to it.
package model

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/gocode"
	"github.com/queuegen/queuegen/internal/spec"
)

// Model is everything generated from one spec.
type Model struct {
	// Source is the spec file's base name, for the headers of generated
	// files.
	Source string
	// Engine is the database engine everything is generated for.
	Engine engine.Engine
	// Package is the Go package name of the generated code.
	Package string
	// GoDir, MigrationsDir and QueriesDir are output directories, relative
	// to the spec file's directory, with forward slashes.
	GoDir, MigrationsDir, QueriesDir string
	// GoOut is DBDir relative to QueriesDir, for sqlc.yaml.
	GoOut string
	// DBPackage is the name of the subpackage of the generated package
	// that holds the queries' Go code (sqlc's, or querycode's): Package
	// + "db". The accessors are the generated package's API; the raw
	// queries stay reachable in DBPackage for programs that want them.
	DBPackage string
	// DBDir is DBPackage's directory (GoDir/DBPackage), DBImport its
	// import path, which the accessors import it by.
	DBDir    string
	DBImport gocode.ImportPath
	// Schema holds every table; Catalog is every object the migrations
	// create in it.
	Schema  string
	Catalog *catalog.Catalog
	// MigrationsTable is the goose version table of the migrations, as
	// written in SQL.
	MigrationsTable string
	// Registry and Periodic are the registry and periodic-ticks tables'
	// names as written in SQL; Periodic is "" when no queue has periodic
	// jobs.
	Registry, Periodic string
	// Nodes is the nodes table's name as written in SQL.
	Nodes string
	// Queues in spec order.
	Queues []*Queue
	// Renames map sqlc's names of the tables to the Go names of their row
	// types.
	Renames []Rename
}

// Rename gives sqlc's row struct of a table a Go name.
type Rename struct {
	Schema, Table, GoName string
}

// reservedGoNames are the package-level names queuegen's generated code
// (and sqlc's) declares whatever the queues are.
var reservedGoNames = []string{"BaseRow", "QueueRegistryRow", "PeriodicTickRow", "NodeRow", "Queries", "New", "DBTX", "DB", "MigrationsTable"}

// importPath is the generated package's import path: package.import_path,
// else derived from the go.mod above package.dir.
func importPath(s *spec.Spec) (gocode.ImportPath, error) {
	if s.Package.ImportPath != "" {
		return gocode.ImportPath(s.Package.ImportPath), nil
	}
	dir := filepath.Join(filepath.Dir(s.File), filepath.FromSlash(s.Package.Dir))
	p, err := gocode.DirImportPath(dir)
	if errors.Is(err, gocode.ErrNoModule) {
		return "", fmt.Errorf("the accessors in %s import the queries' Go code in its subpackage %sdb by import path, and %s is in no Go module (no go.mod in it or above it): run go mod init, or set package.import_path", s.Package.Dir, s.Package.Name, s.Package.Dir)
	}
	return p, err
}

// Build makes the model of a validated spec. It fails, with errors at the
// spec's keys, when the engine cannot serve the spec or the generated Go
// names would collide.
func Build(s *spec.Spec) (*Model, error) {
	eng, err := engine.Lookup(s.Engine)
	if err != nil {
		return nil, spec.Errors{s.ErrorAt("engine", "%v", err)}
	}
	if errs := eng.Check(s); len(errs) > 0 {
		return nil, errs
	}
	if c, ok := eng.(engine.Configurer); ok {
		eng = c.Configure(s)
	}
	if _, ok := eng.(engine.Distributor); !ok {
		var errs spec.Errors
		for _, q := range s.Queues {
			if k := "queues[" + q.Name + "].distribute"; s.Has(k) {
				errs = append(errs, s.ErrorAt(k, "distribute makes the queue's table a Citus distributed table, a PostgreSQL extension, and the spec's engine is %s; remove distribute", s.Engine))
			}
		}
		if len(errs) > 0 {
			return nil, errs
		}
	}
	dbPackage := s.Package.Name + "db"
	m := &Model{
		Source:        path.Base(strings.ReplaceAll(s.File, `\`, "/")),
		Engine:        eng,
		Package:       s.Package.Name,
		GoDir:         s.Package.Dir,
		MigrationsDir: s.Migrations,
		QueriesDir:    s.Queries,
		GoOut:         relPath(s.Queries, path.Join(s.Package.Dir, dbPackage)),
		DBPackage:     dbPackage,
		DBDir:         path.Join(s.Package.Dir, dbPackage),
		Schema:        s.Schema,
	}
	if !s.Has("schema") {
		m.Schema = eng.DefaultSchema()
	}
	c := &catalog.Catalog{Schema: m.Schema, Registry: eng.Registry()}
	m.Catalog = c
	m.Registry = eng.Qualify(m.Schema, c.Registry.Name)
	m.MigrationsTable = eng.Qualify(m.Schema, s.MigrationsTable)
	m.Renames = append(m.Renames, Rename{m.Schema, c.Registry.Name, "QueueRegistryRow"})
	c.Nodes = eng.Nodes()
	m.Nodes = eng.Qualify(m.Schema, c.Nodes.Name)
	m.Renames = append(m.Renames, Rename{m.Schema, c.Nodes.Name, "NodeRow"})

	var extra []*catalog.Column
	for _, col := range s.Base.Columns {
		extra = append(extra, eng.Column(col))
	}
	for _, q := range s.Queues {
		if q.Inherits && eng.Inheritance() {
			c.Base = eng.BaseTable(s.Base.Table, extra)
			m.Renames = append(m.Renames, Rename{m.Schema, c.Base.Name, "BaseRow"})
			break
		}
	}
	for _, q := range s.Queues {
		if len(q.Periodic) > 0 {
			c.Periodic = eng.Periodic()
			m.Periodic = eng.Qualify(m.Schema, c.Periodic.Name)
			m.Renames = append(m.Renames, Rename{m.Schema, c.Periodic.Name, "PeriodicTickRow"})
			break
		}
	}
	for _, q := range s.Queues {
		if q.Distribute.Set() {
			// queuegen's own tables are copied to every node.
			c.Reference = true
		}
		// A distributed queue has no trigger: its pushes notify.
		if q.Notify && !q.Distribute.Set() && eng.NotifyFunction() != "" {
			c.Functions = []string{eng.NotifyFunction()}
			break
		}
	}

	owner := map[string]*Queue{}
	for _, name := range reservedGoNames {
		owner[name] = nil
	}
	var errs spec.Errors
	colocate := ""
	for _, sq := range s.Queues {
		q := m.queue(s, sq)
		if dist := q.Table.Distribution; dist != nil {
			// Every distributed queue table is colocated with the first.
			dist.ColocateWith = colocate
			if colocate == "" {
				colocate = q.Table.Name
			}
		}
		m.Queues = append(m.Queues, q)
		c.Queues = append(c.Queues, &catalog.Queue{Name: q.Name, Mode: string(sq.Mode), Table: q.Table, Archive: q.Archive, RateLog: q.RateLog, Backlog: q.Backlog, RenamedFrom: sq.RenamedFrom})
		m.Renames = append(m.Renames, Rename{m.Schema, q.Table.Name, q.RowType})
		if q.Archive != nil {
			m.Renames = append(m.Renames, Rename{m.Schema, q.Archive.Name, q.ArchiveRowType})
		}
		for _, name := range GoNames(q.GoName, q.Archive != nil, q.FairBy != "") {
			prev, taken := owner[name]
			if !taken {
				owner[name] = q
				continue
			}
			what := "queuegen's own code"
			if prev != nil {
				what = fmt.Sprintf("queue %q", prev.Name)
			}
			errs = append(errs, s.ErrorAt("queues["+sq.Name+"].name", "the generated Go name %s is also generated for %s; rename the queue", name, what))
			break
		}
	}
	errs = append(errs, m.checkNames(s)...)
	errs = append(errs, m.checkClashes(s)...)
	if imp, err := importPath(s); err != nil {
		errs = append(errs, s.ErrorAt("package", "%v", err))
	} else {
		m.DBImport = imp + gocode.ImportPath("/"+m.DBPackage)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return m, nil
}

// checkNames checks every name the migrations will create against the
// engine's limits: each whole (an engine would cut a longer one short, and
// cut names can collide), relations unique in the schema, and each table
// within the engine's column limit. Errors point at the spec key the name
// derives from.
func (m *Model) checkNames(s *spec.Spec) spec.Errors {
	limits := m.Engine.Limits()
	var errs spec.Errors
	owners := map[string]string{}
	table := func(t *catalog.Table, key, what string, columns int) {
		for _, rel := range m.Engine.Relations(t) {
			if prev, taken := owners[rel]; taken && prev != what {
				errs = append(errs, s.ErrorAt(key, "%s would create %q, which %s creates too; rename one", what, rel, prev))
			}
			owners[rel] = what
		}
		names := m.Engine.Relations(t)
		for _, k := range t.Checks {
			names = append(names, k.Name)
		}
		if t.NotifyTrigger != "" {
			names = append(names, t.NotifyTrigger)
		}
		longest := ""
		for _, n := range names {
			if len(n) > len(longest) {
				longest = n
			}
		}
		if over := len(longest) - limits.MaxIdentifier; over > 0 {
			unit := "bytes"
			if over == 1 {
				unit = "byte"
			}
			errs = append(errs, s.ErrorAt(key, "%s would create %q, %d bytes long, and %s keeps names of at most %d bytes: shorten the table's name by %d %s",
				what, longest, len(longest), m.Engine.Name(), limits.MaxIdentifier, over, unit))
		}
		if columns > limits.MaxColumns {
			errs = append(errs, s.ErrorAt(key, "%s would have %d columns, and %s allows at most %d", what, columns, m.Engine.Name(), limits.MaxColumns))
		}
	}
	if b := m.Catalog.Base; b != nil {
		table(b, "base.table", "the base table "+b.Name, len(b.Columns))
	}
	for i, q := range m.Queues {
		key := "queues[" + q.Name + "].table"
		if !s.Has(key) {
			key = "queues[" + q.Name + "].name"
		}
		columns := len(q.Table.Columns)
		if q.Table.Inherits != "" {
			columns += len(m.Catalog.Base.Columns)
		}
		table(q.Table, key, fmt.Sprintf("queue %s (table %s)", q.Name, s.Queues[i].Table), columns)
		if q.Archive != nil {
			table(q.Archive, key, fmt.Sprintf("queue %s (archive %s)", q.Name, q.Archive.Name), len(q.Archive.Columns))
		}
		if q.RateLog != nil {
			table(q.RateLog, key, fmt.Sprintf("queue %s (rate log %s)", q.Name, q.RateLog.Name), len(q.RateLog.Columns))
		}
		if q.Backlog != nil {
			table(q.Backlog, key, fmt.Sprintf("queue %s (backlog %s)", q.Name, q.Backlog.Name), columns)
		}
	}
	return errs
}

// GoNames are the package-level Go names generated for a queue whose Go
// name is g: the accessor's types and constants, and sqlc's query methods
// with their parameter and row types (with an archive, its row type and
// query too; with fair_by, the MySQL fair claim's listing of the values
// and seek of one value's share).
func GoNames(g string, archive, fair bool) []string {
	names := []string{g + "Queue", g + "Payload", g + "Row", g + "MaxAttempts", g + "Lease", g + "Backoff", g + "RetainSucceeded", g + "RetainDead", g + "Buckets"}
	ops := []string{"Push", "PushMany", "Claim", "Complete", "CompleteMany", "Fail", "FailMany", "FailManyAt", "Snooze", "Discard", "Extend", "Release", "ReleaseNode", "Reap", "Get", "Paused", "SetPaused", "Depth", "DepthAtMost", "Purge", "AdvanceTick", "Defaults",
		// MySQL's claims, failures and maintenance are several statements.
		"ClaimExpired", "ClaimDue", "Lease", "Attempt", "Held", "Now", "LockMaintenance", "Doomed",
		// A distributed queue's (PostgreSQL with Citus).
		"ReserveIds", "Notify"}
	if archive {
		names = append(names, g+"ArchiveRow")
		ops = append(ops, "GetArchived")
	}
	if fair {
		ops = append(ops, "FirstFairKey", "NextFairKey", "ClaimKey")
	}
	for _, op := range ops {
		names = append(names, op+g, op+g+"Params", op+g+"Row")
	}
	return append(names, "PushMany"+g+"At", "PushMany"+g+"AtParams")
}

// relPath is the slash path from directory from to directory to, both
// relative to the same root.
func relPath(from, to string) string {
	split := func(p string) []string {
		if p == "." || p == "" {
			return nil
		}
		return strings.Split(p, "/")
	}
	f, t := split(from), split(to)
	i := 0
	for i < len(f) && i < len(t) && f[i] == t[i] {
		i++
	}
	parts := make([]string, 0, len(f)-i+len(t)-i)
	for range f[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, t[i:]...)
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}
