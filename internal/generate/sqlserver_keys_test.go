package generate_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/generate"
)

// sqlServerKeySpec is a SQL Server spec of lease-mode queue sync; the
// queue's keys are inserted where the spec is written.
const sqlServerKeySpec = `version: 1
engine: sqlserver
package: {name: jobs, dir: jobs}
migrations: migrations
queries: queries
queues:
  - name: sync
%s    payload:
      columns:
        account: bigint
        target: text
`

// TestSQLServerKeyEvolution adds each key SQL Server builds for a queue to
// a spec that had none, then removes it again, and checks the migrations
// each change writes: Up creates what the key needs and Down drops it (and
// the other way round for the removal). The migrations pass tsql-check.
// Nothing runs against a server: no SQL Server runs here.
func TestSQLServerKeyEvolution(t *testing.T) {
	checker := tsqlCheck(t)
	for _, tc := range []struct {
		name, keys string
		// up are texts the migration adding the key must hold in Up, and
		// the migration removing it in Down; removeUp what the removal's
		// Up must hold besides.
		up, removeUp []string
	}{
		{"fair_by", "    fair_by: account\n", []string{"CREATE INDEX sync_queue_fair_idx ON sync_queue (account, run_after, id)"}, []string{"DROP INDEX IF EXISTS sync_queue_fair_idx ON sync_queue;"}},
		// Limits are held by the claim's queries alone: no DDL.
		{"limits", "    limits: {global: 4}\n", nil, nil},
		{"rate", "    rate: {limit: 10, per: 1s}\n", []string{"CREATE TABLE sync_queue_rate (", "PRIMARY KEY CLUSTERED (claimed_at, id)"}, []string{"DROP TABLE sync_queue_rate;"}},
		{"archive", "    on_success: archive\n    retention: {succeeded: 1d}\n", []string{"CREATE TABLE sync_queue_archive (", "PRIMARY KEY CLUSTERED (finished_at, id)", "CREATE INDEX sync_queue_archive_id_idx ON sync_queue_archive (id)"}, []string{"DROP TABLE sync_queue_archive;"}},
		// The backlog's ids continue the queue table's; removing it moves
		// its jobs, ids and all, into the queue table first.
		{"backlog", "    fair_by: account\n    backlog: {batch: 100}\n", []string{"CREATE TABLE sync_queue_backlog (", "IDENT_CURRENT(N'sync_queue') + 1", "DBCC CHECKIDENT (N''sync_queue_backlog'', RESEED, @seed);", "CREATE INDEX sync_queue_backlog_fair_idx ON sync_queue_backlog (account, run_after, id)"},
			[]string{"SET IDENTITY_INSERT sync_queue ON;\nINSERT INTO sync_queue (", "FROM sync_queue_backlog WITH (TABLOCKX);\nSET IDENTITY_INSERT sync_queue OFF;", "DROP TABLE sync_queue_backlog;"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := projectDir(t)
			gen := func(keys string) string {
				t.Helper()
				before, _ := filepath.Glob(filepath.Join(dir, "migrations", "*.sql"))
				spec := filepath.Join(dir, "queuegen.yaml")
				if err := os.WriteFile(spec, []byte(fmt.Sprintf(sqlServerKeySpec, keys)), 0o644); err != nil {
					t.Fatal(err)
				}
				out, err := generate.Generate(spec, generate.Options{AllowDrop: true})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := out.Write(); err != nil {
					t.Fatal(err)
				}
				after, _ := filepath.Glob(filepath.Join(dir, "migrations", "*.sql"))
				if len(after) == len(before) {
					return ""
				}
				data, err := os.ReadFile(after[len(after)-1])
				if err != nil {
					t.Fatal(err)
				}
				return string(data)
			}
			gen("")
			add := gen(tc.keys)
			remove := gen("")
			if tc.up == nil {
				if add != "" || remove != "" {
					t.Errorf("%s needs no DDL, but the spec changes wrote migrations:\n%s\n%s", tc.name, add, remove)
				}
				return
			}
			addUp, addDown, _ := strings.Cut(add, "-- +goose Down")
			removeUp, removeDown, _ := strings.Cut(remove, "-- +goose Down")
			for _, want := range tc.up {
				if !strings.Contains(addUp, want) {
					t.Errorf("adding %s: Up lacks %q:\n%s", tc.name, want, addUp)
				}
				if !strings.Contains(removeDown, want) {
					t.Errorf("removing %s: Down lacks %q:\n%s", tc.name, want, removeDown)
				}
			}
			for _, want := range tc.removeUp {
				if !strings.Contains(removeUp, want) {
					t.Errorf("removing %s: Up lacks %q:\n%s", tc.name, want, removeUp)
				}
			}
			if addDown == "" || removeUp == "" || addDown == removeDown {
				t.Errorf("adding %s then removing it: want an Up and a Down each", tc.name)
			}
			files := []string{filepath.Join(dir, "add.sql"), filepath.Join(dir, "remove.sql")}
			os.WriteFile(files[0], []byte(add), 0o644)
			os.WriteFile(files[1], []byte(remove), 0o644)
			if out, err := exec.Command(checker, files...).CombinedOutput(); err != nil {
				t.Fatalf("tsql-check rejects the migrations: %v\n%s", err, out)
			}
		})
	}
}
