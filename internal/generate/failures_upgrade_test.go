package generate_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/generate"
)

// failuresInState matches the failures column and its SQL Server check in
// a state file: without them, the state is what queuegen's migrations made
// before the column existed.
var failuresInState = regexp.MustCompile(`(?m)^ *- \{name: (failures|\w+_failures_json_check)\b.*\n`)

// TestFailuresUpgrade: a project whose migrations were emitted before the
// failures column existed gets, on its next generate, one NEW migration
// that adds the column to every table holding jobs (the INHERITS base, the
// standalone queue tables, the archives), the statements each engine adds
// a column with in place, and the emitted migrations are left as they
// were. It catches a column added to the bookkeeping without a migration
// (or with one that rewrites the emitted ones, or a table left out).
func TestFailuresUpgrade(t *testing.T) {
	for _, c := range []struct {
		spec   string
		tables []string
		add    string
	}{
		{"../../testdata/archive/queuegen.yaml", []string{"base_queue", "event_queue_archive", "ledger_queue", "ledger_queue_archive"},
			"ALTER TABLE %s ADD COLUMN IF NOT EXISTS failures jsonb;"},
		{"../../testdata/mysql/queuegen.yaml", nil, "ALTER TABLE %s ADD COLUMN failures JSON, ALGORITHM = INSTANT;"},
		{"../../testdata/sqlserver/queuegen.yaml", nil, "%s ADD failures NVARCHAR(MAX);"},
	} {
		t.Run(filepath.Base(filepath.Dir(c.spec)), func(t *testing.T) {
			data, err := os.ReadFile(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			dir := projectDir(t)
			specPath := filepath.Join(dir, "queuegen.yaml")
			if err := os.WriteFile(specPath, data, 0o644); err != nil {
				t.Fatal(err)
			}
			generateAndWrite(t, specPath)
			migrations := filepath.Join(dir, "db", "migrations")
			state := filepath.Join(migrations, "queuegen.state.yaml")
			old, _ := os.ReadFile(state)
			before := failuresInState.ReplaceAll(old, nil)
			if len(before) == len(old) {
				t.Fatal("no failures column in the state file")
			}
			if err := os.WriteFile(state, before, 0o644); err != nil {
				t.Fatal(err)
			}
			emitted := map[string][]byte{}
			files, _ := filepath.Glob(filepath.Join(migrations, "*.sql"))
			for _, f := range files {
				emitted[f], _ = os.ReadFile(f)
			}
			generateAndWrite(t, specPath)
			now, _ := filepath.Glob(filepath.Join(migrations, "*.sql"))
			var added []string
			for _, f := range now {
				data, _ := os.ReadFile(f)
				if was, ok := emitted[f]; !ok {
					added = append(added, f)
				} else if string(was) != string(data) {
					t.Errorf("%s: an emitted migration was rewritten", filepath.Base(f))
				}
			}
			if len(added) != 1 {
				t.Fatalf("%d new migrations, want 1: %v", len(added), added)
			}
			up, _, _ := strings.Cut(string(must(os.ReadFile(added[0]))), "-- +goose Down")
			tables := c.tables
			if tables == nil {
				tables = regexp.MustCompile(`(?m)^ *name: (\w+_queue)$`).FindAllString(string(old), -1)
				for i := range tables {
					tables[i] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(tables[i]), "name:"))
				}
			}
			if len(tables) == 0 {
				t.Fatal("no tables found")
			}
			for _, table := range tables {
				if want := strings.ReplaceAll(c.add, "%s", table); !strings.Contains(up, want) {
					t.Errorf("the new migration lacks %q:\n%s", want, up)
				}
			}
			if strings.Count(up, "failures") < len(tables) || slices.Contains(tables, "") {
				t.Errorf("the new migration:\n%s", up)
			}
			after, _ := os.ReadFile(state)
			tablesOf := func(state []byte) string { s, _, _ := strings.Cut(string(state), "\nmigrations:"); return s }
			if tablesOf(after) != tablesOf(old) {
				t.Error("the state after the new migration is not the state of a project generated with the column")
			}
		})
	}
}

// generateAndWrite generates the spec at specPath and writes its files.
func generateAndWrite(t *testing.T, specPath string) {
	t.Helper()
	out, err := generate.Generate(specPath, generate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write(); err != nil {
		t.Fatal(err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
