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
	"github.com/queuegen/queuegen/internal/migrate"
)

// mysqlBacklogSpec is a MySQL fair queue, with a backlog when backlog is
// its key (e.g. "backlog: {batch: 10}").
func mysqlBacklogSpec(backlog string) string {
	return `version: 1
engine: mysql
package: {name: jobs, dir: jobs}
migrations: db/migrations
queries: db/queries
queues:
  - name: fair
    fair_by: tenant
    ` + backlog + `
    payload:
      columns:
        tenant: varchar(100)
        n: integer
`
}

// TestMySQLBacklogEvolution: adding a backlog to a live MySQL queue
// creates it numbering above every id the queue table gave (a job keeps
// one id in either table); removing it moves its jobs to the queue
// table, ids and all, and drops it, and the queue table numbers on above
// them; each Down undoes its Up, the backlog made again numbering above
// the queue table's ids.
func TestMySQLBacklogEvolution(t *testing.T) {
	ctx := context.Background()
	db := dbtest.New(t, dburl.MySQL)
	dir := projectDir(t)
	specPath := filepath.Join(dir, "queuegen.yaml")
	migrations := filepath.Join(dir, "db", "migrations")
	var added []int // migrations each step added
	step := func(backlog string) string {
		t.Helper()
		before, _ := filepath.Glob(filepath.Join(migrations, "*.sql"))
		if err := os.WriteFile(specPath, []byte(mysqlBacklogSpec(backlog)), 0o644); err != nil {
			t.Fatal(err)
		}
		generateAndWrite(t, specPath)
		after, _ := filepath.Glob(filepath.Join(migrations, "*.sql"))
		if len(after) == len(before) {
			t.Fatalf("%d migrations, then as many: want more", len(before))
		}
		m, err := migrate.Open(db.Address, migrations)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if err := m.Up(ctx, io.Discard); err != nil {
			t.Fatalf("up: %v", err)
		}
		added = append(added, len(after)-len(before))
		var ups strings.Builder
		for _, f := range after[len(before):] {
			ups.Write(must(os.ReadFile(f)))
		}
		return ups.String()
	}
	// down undoes the last n migrations.
	down := func(n int) {
		t.Helper()
		m, err := migrate.Open(db.Address, migrations)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		for range n {
			if err := m.Down(ctx, io.Discard); err != nil {
				t.Fatalf("down: %v", err)
			}
		}
	}
	exec := func(stmt string, args ...any) int64 {
		t.Helper()
		res, err := db.SQL.Exec(stmt, args...)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		id, _ := res.LastInsertId()
		return id
	}
	count := func(query string) int {
		t.Helper()
		var n int
		if err := db.SQL.QueryRow(query).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}
	push := func(table string, n int) int64 {
		t.Helper()
		return exec("INSERT INTO "+table+" (tenant, n, max_attempts, run_after, created_at) VALUES ('a', ?, 3, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))", n)
	}
	tableExists := func(name string) bool {
		return count("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '"+name+"'") == 1
	}

	step("")
	// Ten jobs, the last five completed (deleted): the queue table has
	// given ids 1 to 10 and holds 1 to 5.
	for i := range 10 {
		push("fair_queue", i)
	}
	exec("DELETE FROM fair_queue WHERE id > 5")

	up := step("backlog: {batch: 10}")
	if !strings.Contains(up, "CREATE TABLE fair_queue_backlog") || !strings.Contains(up, "ALTER TABLE fair_queue_backlog AUTO_INCREMENT") {
		t.Fatalf("adding the backlog:\n%s", up)
	}
	if id := push("fair_queue_backlog", 100); id <= 10 {
		t.Errorf("the backlog's first job has id %d: want above the 10 the queue table gave", id)
	}
	push("fair_queue_backlog", 101)

	up = step("")
	if !strings.Contains(up, "RENAME TABLE fair_queue_backlog TO fair_queue_moving") || strings.Contains(up, "DROP TABLE fair_queue_backlog;") {
		t.Fatalf("removing the backlog:\n%s", up)
	}
	if tableExists("fair_queue_backlog") || tableExists("fair_queue_moving") {
		t.Error("a backlog table is left after the backlog was removed")
	}
	if n := count("SELECT COUNT(*) FROM fair_queue WHERE n IN (100, 101) AND id > 10"); n != 2 {
		t.Errorf("%d of the backlog's 2 jobs are in the queue table with their ids", n)
	}
	last := int64(count("SELECT MAX(id) FROM fair_queue"))
	if id := push("fair_queue", 200); id <= last {
		t.Errorf("the queue table's next job has id %d, not above the moved jobs' (%d)", id, last)
	}
	top := int64(count("SELECT MAX(id) FROM fair_queue"))

	// Down of the removal: the backlog is back, empty, numbering above.
	down(added[2])
	if !tableExists("fair_queue_backlog") || count("SELECT COUNT(*) FROM fair_queue_backlog") != 0 {
		t.Fatal("down of the removal does not make the backlog again, empty")
	}
	if id := push("fair_queue_backlog", 300); id <= top {
		t.Errorf("the backlog made again by Down gives id %d, not above the queue table's %d", id, top)
	}
	// Down of the addition: the backlog is gone.
	exec("DELETE FROM fair_queue_backlog")
	down(added[1])
	if tableExists("fair_queue_backlog") {
		t.Error("down of the addition leaves the backlog")
	}
}
