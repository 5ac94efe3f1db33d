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

// TestMySQLArchiveEvolution switches a live MySQL queue to on_success:
// archive and back: the first switch emits a migration that creates the
// archive, partitioned by day of finished_at, which applies to MariaDB
// holding a job and rolls back; the way back is refused without
// --allow-drop (the archived jobs would go) and with it emits the archive's
// DROP TABLE, which applies and rolls back too (the archive comes back,
// partitioned).
func TestMySQLArchiveEvolution(t *testing.T) {
	ctx := context.Background()
	project := projectDir(t)
	specPath := filepath.Join(project, "queuegen.yaml")
	gen := func(onSuccess string, allowDrop bool) error {
		t.Helper()
		spec := `version: 1
engine: mysql
package: {name: jobs, dir: jobs}
migrations: db/migrations
queries: db/queries
queues:
  - name: receipts
    on_success: ` + onSuccess + `
    retention: {succeeded: 7d}
    payload:
      columns:
        email: text
`
		if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := generate.Generate(specPath, generate.Options{AllowDrop: allowDrop})
		if err != nil {
			return err
		}
		_, err = out.Write()
		return err
	}
	migrations := filepath.Join(project, "db", "migrations")
	last := func() string {
		t.Helper()
		files, _ := filepath.Glob(filepath.Join(migrations, "*.sql"))
		data, err := os.ReadFile(files[len(files)-1])
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	db := dbtest.New(t, dburl.MySQL)
	up := func() *migrate.Migrator {
		t.Helper()
		m, err := migrate.Open(db.Address, migrations)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		if err := m.Up(ctx, io.Discard); err != nil {
			t.Fatalf("up: %v", err)
		}
		return m
	}
	partitioned := func() bool {
		t.Helper()
		var n int
		if err := db.SQL.QueryRow(`SELECT COUNT(*) FROM information_schema.PARTITIONS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'receipts_queue_archive' AND PARTITION_NAME = 'pmax'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	if err := gen("keep", false); err != nil {
		t.Fatal(err)
	}
	up()
	if _, err := db.SQL.Exec(`INSERT INTO receipts_queue (email, max_attempts, created_at, run_after) VALUES ('a@example.com', 3, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`); err != nil {
		t.Fatal(err)
	}

	if err := gen("archive", false); err != nil {
		t.Fatalf("keep → archive: %v", err)
	}
	if m := last(); !strings.Contains(m, "CREATE TABLE receipts_queue_archive (") || !strings.Contains(m, "PARTITION BY RANGE COLUMNS (finished_at) (") ||
		!strings.Contains(m, "DROP TABLE receipts_queue_archive;") {
		t.Errorf("keep → archive emitted:\n%s", m)
	}
	m := up()
	if !partitioned() {
		t.Errorf("no partitioned archive after keep → archive")
	}
	if err := m.Down(ctx, io.Discard); err != nil {
		t.Fatalf("down from archive: %v", err)
	}
	if partitioned() {
		t.Errorf("the archive is left after its migration's down")
	}
	m = up()

	err := gen("keep", false)
	if err == nil || !strings.Contains(err.Error(), "allow-drop") {
		t.Fatalf("archive → keep without --allow-drop = %v, want a refusal naming it", err)
	}
	if err := gen("keep", true); err != nil {
		t.Fatalf("archive → keep with --allow-drop: %v", err)
	}
	if m := last(); !strings.Contains(m, "DROP TABLE receipts_queue_archive;") {
		t.Errorf("archive → keep emitted:\n%s", m)
	}
	m = up()
	if partitioned() {
		t.Errorf("the archive is left after archive → keep")
	}
	if err := m.Down(ctx, io.Discard); err != nil {
		t.Fatalf("down from keep: %v", err)
	}
	if !partitioned() {
		t.Errorf("the archive's drop rolled back leaves no partitioned archive")
	}
	var jobs int
	if err := db.SQL.QueryRow("SELECT COUNT(*) FROM receipts_queue").Scan(&jobs); err != nil || jobs != 1 {
		t.Errorf("the queue holds %d jobs, %v; want the one pushed before the switches", jobs, err)
	}
}
