package generate_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/generate"
	"github.com/queuegen/queuegen/internal/migrate"
)

// TestMySQLRateEvolves: on MySQL/MariaDB, adding rate to a live queue
// creates its rate log in a migration of its own, changing by rebuilds it,
// and removing rate drops it (no --allow-drop: it holds one window of
// claims); each migration applies to a database holding jobs, and each
// Down takes the log back to what it was.
func TestMySQLRateEvolves(t *testing.T) {
	ctx := context.Background()
	project := projectDir(t)
	specPath := filepath.Join(project, "queuegen.yaml")
	const head = `version: 1
engine: mysql
package: {name: jobs, dir: jobs}
migrations: migrations
queries: queries
queues:
  - name: hook
    fair_by: tenant
`
	const payload = `    payload:
      columns:
        tenant: varchar(100)
        url: text
`
	revs := []struct {
		name, rate string
		// want is in the revision's migration; log is the rate log's
		// columns after it ("" for none).
		want []string
		log  string
	}{
		{"start", "", []string{"CREATE TABLE hook_queue ("}, ""},
		{"rate_by", "    rate: {limit: 10, per: 1s, by: tenant}\n",
			[]string{"CREATE TABLE hook_queue_rate (", "KEY hook_queue_rate_tenant_idx (tenant, claimed_at, jobs)", "DROP TABLE hook_queue_rate;"},
			"id claimed_at tenant jobs"},
		{"rate", "    rate: {limit: 10, per: 500ms}\n",
			[]string{"DROP TABLE hook_queue_rate;", "CREATE TABLE hook_queue_rate (", "KEY hook_queue_rate_claimed_at_idx (claimed_at, jobs)"},
			"id claimed_at jobs"},
		{"no_rate", "", []string{"DROP TABLE hook_queue_rate;", "CREATE TABLE hook_queue_rate ("}, ""},
	}
	db := dbtest.New(t, dburl.MySQL)
	logColumns := func() string {
		rows, err := db.SQL.QueryContext(ctx, `SELECT column_name FROM information_schema.columns
			WHERE table_schema = DATABASE() AND table_name = 'hook_queue_rate' ORDER BY ordinal_position`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var cols []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			cols = append(cols, c)
		}
		return strings.Join(cols, " ")
	}
	dir := filepath.Join(project, "migrations")
	var logs []string // the log's columns after each revision
	for i, rev := range revs {
		if err := os.WriteFile(specPath, []byte(head+rev.rate+payload), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := generate.Generate(specPath, generate.Options{})
		if err != nil {
			t.Fatalf("%s: %v", rev.name, err)
		}
		if _, err := out.Write(); err != nil {
			t.Fatalf("%s: %v", rev.name, err)
		}
		again, _ := generate.Generate(specPath, generate.Options{})
		if changes, err := again.Plan(); err != nil || len(changes) != 0 {
			t.Fatalf("%s: generating twice changed %v, %v", rev.name, changes, err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.sql"))
		if len(files) != i+1 {
			t.Fatalf("%s: %d migrations, want %d (one a revision)", rev.name, len(files), i+1)
		}
		data, _ := os.ReadFile(files[i])
		for _, w := range rev.want {
			if !strings.Contains(string(data), w) {
				t.Errorf("%s: %s lacks %q:\n%s", rev.name, filepath.Base(files[i]), w, data)
			}
		}
		m, err := migrate.Open(db.Address, dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Up(ctx, io.Discard); err != nil {
			t.Fatalf("%s: up: %v", rev.name, err)
		}
		m.Close()
		if got := logColumns(); got != rev.log {
			t.Errorf("%s: rate log columns %q, want %q", rev.name, got, rev.log)
		}
		logs = append(logs, logColumns())
		// A job waits through every step.
		if _, err := db.SQL.ExecContext(ctx, `INSERT INTO hook_queue (tenant, url, max_attempts, created_at, run_after)
			VALUES ('a', 'x', 3, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`); err != nil {
			t.Fatalf("%s: push: %v", rev.name, err)
		}
	}
	m, err := migrate.Open(db.Address, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i := len(revs) - 1; i > 0; i-- {
		if err := m.Down(ctx, io.Discard); err != nil {
			t.Fatalf("down from %s: %v", revs[i].name, err)
		}
		if got := logColumns(); got != logs[i-1] {
			t.Errorf("down from %s: rate log columns %q, want %q", revs[i].name, got, logs[i-1])
		}
	}
	var jobs int
	if err := db.SQL.QueryRowContext(ctx, `SELECT COUNT(*) FROM hook_queue`).Scan(&jobs); err != nil || jobs != len(revs) {
		t.Errorf("%d jobs after the migrations, %v; want the %d pushed", jobs, err, len(revs))
	}
}
