package generate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/generate"
)

const moduleSpec = `version: 1
package: {name: jobs, dir: internal/jobs%s}
migrations: db/migrations
queries: db/queries
queues:
  - name: email
    payload: {columns: {recipient: text}}
`

// TestQueriesSubpackageImportPath: the accessors import sqlc's code from
// the subpackage <name>db by an import path derived from the go.mod above
// the package (or package.import_path); with neither, generate says which
// key to set and writes nothing. It catches an accessor that imports a
// wrong path (it would not compile in the application), and a generate
// that writes unbuildable code outside a module.
func TestQueriesSubpackageImportPath(t *testing.T) {
	write := func(dir, extra string) string {
		t.Helper()
		p := filepath.Join(dir, "queuegen.yaml")
		if err := os.WriteFile(p, []byte(strings.Replace(moduleSpec, "%s", extra, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	accessor := func(out *generate.Output) string {
		t.Helper()
		for _, f := range out.Files {
			if f.Path == "internal/jobs/email_queue.go" {
				return string(f.Data)
			}
		}
		t.Fatalf("no accessor among %d files", len(out.Files))
		return ""
	}

	t.Run("derived from go.mod", func(t *testing.T) {
		out, err := generate.Generate(write(projectDir(t), ""), generate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if a := accessor(out); !strings.Contains(a, `"example.com/app/internal/jobs/jobsdb"`) {
			t.Errorf("the accessor does not import example.com/app/internal/jobs/jobsdb:\n%s", a)
		}
		for _, f := range out.Files {
			if strings.HasSuffix(f.Path, ".sql.go") && f.Path != "internal/jobs/jobsdb/email.sql.go" {
				t.Errorf("sqlc's code at %s, want internal/jobs/jobsdb/", f.Path)
			}
		}
	})
	t.Run("package.import_path", func(t *testing.T) {
		out, err := generate.Generate(write(t.TempDir(), ", import_path: example.org/svc/jobs"), generate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if a := accessor(out); !strings.Contains(a, `"example.org/svc/jobs/jobsdb"`) {
			t.Errorf("the accessor does not import example.org/svc/jobs/jobsdb:\n%s", a)
		}
	})
	t.Run("no module", func(t *testing.T) {
		dir := t.TempDir()
		_, err := generate.Generate(write(dir, ""), generate.Options{})
		if err == nil {
			t.Fatal("generate outside a Go module succeeded")
		}
		for _, want := range []string{"queuegen.yaml:2:1: package:", "no go.mod", "package.import_path"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q: %v", want, err)
			}
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("generate outside a module wrote files: %d entries", len(entries))
		}
	})
}
