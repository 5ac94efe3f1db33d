// Package render executes the embedded templates over a model and returns
// the query files, sqlc.yaml and the gofmt'ed Go accessors. Migrations and
// the schema file are package evolve's; sqlc's own Go output is produced
// from these by package generate.
//
// Go files are rendered through a gocode.File: the templates write other
// packages' identifiers through functions that record the imports they
// need, and the import block is written last, from what the body used.
package render

import (
	"bytes"
	"fmt"
	"go/format"
	"path"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/gocode"
	"github.com/queuegen/queuegen/internal/model"
	"github.com/queuegen/queuegen/templates"
)

// File is one rendered file. Path is relative to the spec file's directory
// and uses forward slashes.
type File struct {
	Path string
	Data []byte
}

// PackageFile is the base name of the Go file holding what every accessor
// of the package shares.
const PackageFile = "queues.go"

// Render renders the files queuegen writes itself besides migrations, in a
// fixed order.
func Render(m *model.Model) ([]File, error) {
	set, err := parse(m.Engine)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, q := range m.Queues {
		sql, err := renderSQL(set, "queries.sql.tmpl", sqlData{Model: m, Queue: q})
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", q.QueriesFile, err)
		}
		files = append(files, File{Path: path.Join(m.QueriesDir, q.QueriesFile), Data: sql})
		code, err := renderGo(set, "queue.go.tmpl", m, q)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", q.AccessorFile, err)
		}
		files = append(files, File{Path: path.Join(m.GoDir, q.AccessorFile), Data: code})
	}
	code, err := renderGo(set, "queues.go.tmpl", m, nil)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", PackageFile, err)
	}
	files = append(files, File{Path: path.Join(m.GoDir, PackageFile), Data: code})
	if set.Lookup("sqlc.yaml.tmpl") == nil {
		// The engine's queries are not compiled by sqlc (package
		// querycode writes their Go).
		return files, nil
	}
	cfg, err := renderSQL(set, "sqlc.yaml.tmpl", sqlData{Model: m})
	if err != nil {
		return nil, fmt.Errorf("render sqlc.yaml: %w", err)
	}
	files = append(files, File{Path: path.Join(m.QueriesDir, "sqlc.yaml"), Data: cfg})
	return files, nil
}

// parse reads the shared templates and the engine's.
func parse(eng engine.Engine) (*template.Template, error) {
	t := template.New("").Funcs(sqlFuncs).Funcs(goFuncs(gocode.NewFile(""), eng.Driver(), ""))
	t, err := t.ParseFS(templates.FS, "queue.go.tmpl")
	if err != nil {
		return nil, err
	}
	return t.ParseFS(templates.FS, eng.Templates()+"/*.tmpl")
}

// sqlData is what the SQL and YAML templates see: the model, and the
// queue being rendered.
type sqlData struct {
	*model.Model
	Queue *model.Queue
}

var sqlFuncs = template.FuncMap{
	"join":      strings.Join,
	"hasPrefix": strings.HasPrefix,
	// maintenanceLock is the SQL literal naming a queue's maintenance
	// lock: its table, qualified, so queues of two schemas do not share
	// one.
	"maintenanceLock": func(d sqlData) string {
		return "'queuegen maintenance " + strings.ReplaceAll(d.Queue.QName, "'", "''") + "'"
	},
	// claimLock is the SQL literal naming a queue's claim lock, which
	// claims of a queue with limits take one at a time.
	"claimLock": func(d sqlData) string {
		return "'queuegen claims " + strings.ReplaceAll(d.Queue.QName, "'", "''") + "'"
	},
	// scheduleLock is the SQL literal naming a queue's scheduler lock,
	// which the scheduler steps of a queue with a backlog take one at a
	// time.
	"scheduleLock": func(d sqlData) string {
		return "'queuegen schedule " + strings.ReplaceAll(d.Queue.QName, "'", "''") + "'"
	},
	// list joins items with commas in lines of at most 80 bytes, the
	// later ones indented by indent (see wrapList).
	"list": func(items []string, indent string) string { return wrapList(items, indent, 80) },
	// claimNow is the claim's clock: the @now parameter, else
	// statement_timestamp(), when the claim's statement started. Not
	// now(), its transaction's start: a claim run in a caller's
	// transaction (WithTx) would date its leases from when that began, and
	// they could be over before it commits. A limited claim's statement
	// starts after the claim lock is taken, so claims' times also follow
	// the order they ran in.
	"claimNow": func(q *model.Queue) string {
		return "coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())"
	},
	// interval is d as a PostgreSQL interval literal: '1 second',
	// '250 milliseconds'.
	"interval": func(d time.Duration) string {
		n, unit := int64(d/time.Microsecond), "microsecond"
		switch {
		case d%time.Second == 0:
			n, unit = int64(d/time.Second), "second"
		case d%time.Millisecond == 0:
			n, unit = int64(d/time.Millisecond), "millisecond"
		}
		if n != 1 {
			unit += "s"
		}
		return fmt.Sprintf("'%d %s'", n, unit)
	},
	// archived lists, for the INSERT that moves completed jobs from the
	// CTE done to q's archive, the archive's columns (what "columns") or
	// the value of each (otherwise): the job's own, but succeeded,
	// finished now and without a lease; wrapped in lines of at most 80
	// bytes, the later ones indented by indent.
	"archived": func(q *model.Queue, what, indent string) string {
		return archived(q, what, indent, "done.", "now()")
	},
	// archivedFrom is archived for an INSERT … SELECT from the queue's
	// table under alias (with its dot), finished at now (MySQL's).
	"archivedFrom": archived,
	// goName is the Go name sqlc gives a snake_case SQL name.
	"goName": gocode.Name,
	// qualified is the claim order's terms with prefix before each column:
	// "job.priority DESC, job.run_after, job.id".
	"qualified": func(prefix string, order []string) string {
		out := make([]string, len(order))
		for i, term := range order {
			out[i] = prefix + term
		}
		return strings.Join(out, ", ")
	},
	// columns lists the fields' column names, each with prefix.
	"columns": func(fs []*model.Field, prefix string) string {
		out := make([]string, len(fs))
		for i, f := range fs {
			out[i] = prefix + f.Name
		}
		return strings.Join(out, ", ")
	},
}

// archived lists the archive's columns (what "columns") or the value of
// each (otherwise), read from the row under alias: the job's own, but
// succeeded, finished at now and without a lease. Columns the database
// computes are left out.
func archived(q *model.Queue, what, indent, alias, now string) string {
	var items []string
	for _, c := range q.Archive.Columns {
		switch {
		case c.Generated:
		case what == "columns":
			items = append(items, c.Name)
		case c.Name == "state":
			items = append(items, "'succeeded'")
		case c.Name == "finished_at":
			items = append(items, now)
		case c.Name == "locked_by", c.Name == "locked_until":
			items = append(items, "NULL")
		default:
			items = append(items, alias+c.Name)
		}
	}
	return wrapList(items, indent, 80)
}

// wrapList joins items with commas into lines of at most width bytes
// (an item longer than that gets a line of its own), each line after the
// first starting with indent; the first is written after something as
// long as indent.
func wrapList(items []string, indent string, width int) string {
	var b strings.Builder
	line := len(indent)
	for i, it := range items {
		if i > 0 {
			b.WriteString(",")
			line++
			if line+1+len(it) > width {
				b.WriteString("\n" + indent)
				line = len(indent)
			} else {
				b.WriteString(" ")
				line++
			}
		}
		b.WriteString(it)
		line += len(it)
	}
	return b.String()
}

func renderSQL(set *template.Template, name string, d sqlData) ([]byte, error) {
	var b bytes.Buffer
	if err := set.ExecuteTemplate(&b, name, d); err != nil {
		return nil, err
	}
	return append(bytes.TrimRight(wrapComments(b.Bytes()), "\n"), '\n'), nil
}

// wrapComments wraps SQL comment lines longer than engine.CommentWidth,
// keeping their indentation. sqlc copies a query's comment lines into the
// Go doc comment of its method, so they stay readable there too.
func wrapComments(data []byte) []byte {
	lines := strings.Split(string(data), "\n")
	var out []string
	for _, l := range lines {
		body := strings.TrimLeft(l, " ")
		indent := l[:len(l)-len(body)]
		if len(l) <= engine.CommentWidth || !strings.HasPrefix(body, "-- ") ||
			strings.HasPrefix(body, "-- name:") || strings.HasPrefix(body, "-- +goose") {
			out = append(out, l)
			continue
		}
		out = append(out, engine.Wrap(indent+"-- ", strings.TrimPrefix(body, "-- "), engine.CommentWidth)...)
	}
	return []byte(strings.Join(out, "\n"))
}

// goData is what the Go templates see.
type goData struct {
	*model.Model
	Queue  *model.Queue
	Driver engine.Driver
}

func renderGo(set *template.Template, name string, m *model.Model, q *model.Queue) ([]byte, error) {
	f := gocode.NewFile("")
	t, err := set.Clone()
	if err != nil {
		return nil, err
	}
	t.Funcs(goFuncs(f, m.Engine.Driver(), m.DBImport))
	var body bytes.Buffer
	if err := t.ExecuteTemplate(&body, name, goData{Model: m, Queue: q, Driver: m.Engine.Driver()}); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by queuegen. DO NOT EDIT.\n// Source: %s.\n\npackage %s\n\n", m.Source, m.Package)
	if imports := f.ImportBlock(); imports != "" {
		b.WriteString(imports + "\n")
	}
	b.Write(bytes.TrimLeft(body.Bytes(), "\n"))
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("generated Go does not parse: %w\n%s", err, b.Bytes())
	}
	return out, nil
}

// goFuncs are the Go templates' functions, bound to the file f whose
// imports they record, to the engine's driver d and to the import path of
// the package of the queries' Go code.
func goFuncs(f *gocode.File, d engine.Driver, queries gocode.ImportPath) template.FuncMap {
	return template.FuncMap{
		// qual writes an identifier, type a type.
		"qual": f.Qualify,
		"type": f.TypeString,
		// use records an import and returns the name to refer to it by.
		"use": func(p string) string { return f.Use(gocode.ImportPath(p)) },
		// ident writes identifier name of package p.
		"ident": func(p, name string) string { return f.Qualify(gocode.ImportPath(p).Ident(name)) },
		// rt writes an identifier of the runtime package queue, impl one
		// of queueimpl (for generated code only, engine-neutral), drv one
		// of the engine's driver runtime (d.Runtime: pgximpl, …).
		"rt":   func(name string) string { return f.Qualify(gocode.Queue.Ident(name)) },
		"impl": func(name string) string { return f.Qualify(gocode.QueueImp.Ident(name)) },
		"drv":  func(name string) string { return f.Qualify(d.Runtime.Ident(name)) },
		// db is the qualifier of the queries' package (sqlc's Queries, its
		// Params and Row types), "jobsdb.", recording its import: written
		// before a name, {{db}}Queries.
		"db": func() string { return f.Use(queries) + "." },
		// duration writes a duration as a constant expression.
		"duration": func(d time.Duration) string { return f.Duration(d) },
		"float":    goFloat,
		"quote":    strconv.Quote,
		"value":    func(v model.Value) string { return goValue(f, v) },
		"args":     func(vs ...any) []any { return vs },
		"add":      func(a, b int) int { return a + b },
		// initialisms lists gocode.Initialisms for sqlc.yaml.
		"initialisms": func() string { return strings.Join(gocode.Initialisms, ", ") },
	}
}

// goFloat writes a finite float as a Go constant.
func goFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// goValue writes a periodic job's fixed field value as a Go expression of
// the field's type: a constant, or a pointer to one for nullable fields.
func goValue(f *gocode.File, v model.Value) string {
	t := v.Field.Type
	var lit string
	switch t.Elem().Ident.Name {
	case "string":
		lit = strconv.Quote(v.String)
	case "bool":
		lit = strconv.FormatBool(v.Bool)
	case "float32", "float64":
		lit = goFloat(v.Float)
	default:
		lit = strconv.FormatInt(v.Int, 10)
	}
	if t.IsPointer() {
		return fmt.Sprintf("%s[%s](%s)", f.Qualify(gocode.QueueImp.Ident("Ptr")), f.TypeString(t.Elem()), lit)
	}
	return lit
}
