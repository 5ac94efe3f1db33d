// Package generate runs the whole pipeline: spec → model → rendered files →
// sqlc (in-process) → the complete set of files, and then writes them, or
// compares them with what is on disk.
//
// Everything is produced in memory (sqlc runs in a private temporary
// directory) before anything is written, so a bad spec, a template error or
// an sqlc error leaves the project untouched.
package generate

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	sqlc "github.com/sqlc-dev/sqlc/pkg/cli"

	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/evolve"
	"github.com/queuegen/queuegen/internal/model"
	"github.com/queuegen/queuegen/internal/querycode"
	"github.com/queuegen/queuegen/internal/render"
	"github.com/queuegen/queuegen/internal/spec"
)

// Output is everything generated from one spec.
type Output struct {
	// Root is the spec file's directory; file paths are relative to it.
	Root  string
	Model *model.Model
	// Files are every emitted file, sorted by path.
	Files []File
}

// File is one generated file. Path is relative to the spec file's
// directory and uses forward slashes.
type File struct {
	Path string
	Data []byte
}

// Options change what Generate may emit.
type Options struct {
	// AllowDrop lets a spec change drop queues and columns (their data
	// with them). Without it such a change is refused.
	AllowDrop bool
	// Manual writes a migration stub to fill in by hand for changes
	// queuegen refuses to write, recording the spec's schema as its result.
	Manual bool
}

// Generate parses the spec at specPath and produces every file, writing
// nothing. Migrations already emitted are never among the files: the first
// run emits the first migration, and later runs one new migration for what
// changed in the spec (see package evolve).
func Generate(specPath string, opts Options) (*Output, error) {
	s, err := spec.Load(specPath)
	if err != nil {
		return nil, err
	}
	m, err := model.Build(s)
	if err != nil {
		return nil, err
	}
	rendered, err := render.Render(m)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, f := range rendered {
		files = append(files, File(f))
	}
	files = append(files, File(evolve.SchemaFile(m, m.Catalog)))
	goFiles, err := queriesGo(m, files)
	if err != nil {
		return nil, err
	}
	root := filepath.Dir(specPath)
	migrations, state, err := evolve.Next(root, m, evolve.NextOptions{Options: evolve.Options{AllowDrop: opts.AllowDrop}, Manual: opts.Manual})
	if err != nil {
		return nil, err
	}
	files = append(files, goFiles...)
	for _, f := range migrations {
		files = append(files, File(f))
	}
	files = append(files, File(state))
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return &Output{Root: root, Model: m, Files: files}, nil
}

// queriesGo writes the Go code of the queries: sqlc's, or queuegen's own
// (package querycode) for an engine sqlc has none for.
func queriesGo(m *model.Model, files []File) ([]File, error) {
	coder, ok := m.Engine.(engine.QueryCoder)
	if !ok {
		return runSQLC(m, files)
	}
	queries := map[string][]byte{}
	for _, f := range files {
		queries[f.Path] = f.Data
	}
	code, err := querycode.Generate(m, coder, queries)
	if err != nil {
		return nil, err
	}
	out := make([]File, len(code))
	for i, f := range code {
		out[i] = File(f)
	}
	return out, nil
}

// sqlcMu serialises in-process sqlc runs: sqlc was written as a program and
// is not documented as safe to run concurrently in one process.
var sqlcMu sync.Mutex

// runSQLC writes the rendered queries, schema and sqlc.yaml to a temporary
// directory, runs sqlc there and returns the Go files it wrote, with
// queuegen's header. An engine whose SQL sqlc knows only in part adapts
// what sqlc reads and writes (engine.SqlcAdapter).
func runSQLC(m *model.Model, files []File) ([]File, error) {
	adapter, _ := m.Engine.(engine.SqlcAdapter)
	if adapter != nil {
		schema := File(evolve.SchemaFile(m, adapter.SqlcSchema(m.Catalog)))
		var adapted []File
		for _, f := range files {
			switch {
			case f.Path == schema.Path:
				f = schema
			case strings.HasSuffix(f.Path, ".sql"):
				f.Data = []byte(adapter.SqlcQueries(string(f.Data)))
			}
			adapted = append(adapted, f)
		}
		files = adapted
	}
	tmp, err := os.MkdirTemp("", "queuegen-sqlc-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for _, f := range files {
		if !strings.HasPrefix(f.Path, m.QueriesDir+"/") && m.QueriesDir != "." {
			continue
		}
		p := filepath.Join(tmp, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return nil, err
		}
	}
	out := filepath.Join(tmp, filepath.FromSlash(m.DBDir))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	sqlcMu.Lock()
	code := sqlc.Run([]string{"generate", "-f", filepath.Join(tmp, filepath.FromSlash(m.QueriesDir), "sqlc.yaml")})
	sqlcMu.Unlock()
	if code != 0 {
		return nil, fmt.Errorf("sqlc failed (exit status %d) on the generated queries; its messages are above. This is a queuegen bug: please report it with your spec", code)
	}
	var goFiles []File
	err = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if adapter != nil {
			data = []byte(adapter.SqlcGo(string(data)))
		}
		rel, _ := filepath.Rel(out, p)
		goFiles = append(goFiles, File{Path: path.Join(m.DBDir, filepath.ToSlash(rel)), Data: sqlcHeader(data)})
		return nil
	})
	return goFiles, err
}

// sqlcHeader replaces sqlc's "Code generated by sqlc" line with queuegen's
// (the file is part of what queuegen generates, and regenerating it needs
// queuegen, not sqlc), keeping the sqlc version lines below it.
func sqlcHeader(data []byte) []byte {
	const sqlcLine = "// Code generated by sqlc. DO NOT EDIT.\n"
	if rest, ok := bytes.CutPrefix(data, []byte(sqlcLine)); ok {
		return append([]byte("// Code generated by queuegen. DO NOT EDIT.\n// Go code for the queries, written by sqlc run in-process:\n"), rest...)
	}
	return data
}

// generatedHeaders are the first lines of files queuegen owns. A file in an
// output directory that starts with one of them but is no longer generated
// is stale and is removed (migrations excepted: they are never removed).
var generatedHeaders = [][]byte{
	[]byte(evolve.Header),
	[]byte("// Code generated by queuegen. DO NOT EDIT."),
	[]byte("# Code generated by queuegen. DO NOT EDIT."),
}

func isGenerated(data []byte) bool {
	for _, h := range generatedHeaders {
		if bytes.HasPrefix(data, h) {
			return true
		}
	}
	return false
}
