package mytest_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/queuegen/queuegen/internal/mytest"
)

// TestServer starts a private server, restarts it cleanly and crashes it:
// each time it comes back on the same port with what was committed, and
// the same *sql.DB reconnects.
func TestServer(t *testing.T) {
	began := time.Now()
	s := mytest.NewServer(t)
	t.Logf("private server on port %d started in %v", s.Port(), time.Since(began).Round(time.Millisecond))
	db := mytest.Open(t, s.DSN())
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE kept (n INT PRIMARY KEY) ENGINE = InnoDB"); err != nil {
		t.Fatal(err)
	}
	rows := func() int {
		t.Helper()
		var n int
		var err error
		for range 20 { // the pool's connections died with the server
			if err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM kept").Scan(&n); err == nil {
				return n
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("the database did not answer after the restart: %v", err)
		return 0
	}
	insert := func(n int) {
		t.Helper()
		if _, err := db.ExecContext(ctx, "INSERT INTO kept VALUES (?)", n); err != nil {
			t.Fatal(err)
		}
	}
	insert(1)

	began = time.Now()
	s.Restart(t)
	t.Logf("restarted (SIGTERM) in %v", time.Since(began).Round(time.Millisecond))
	if n := rows(); n != 1 {
		t.Fatalf("%d rows after the restart, want 1", n)
	}
	insert(2)

	began = time.Now()
	s.Crash(t)
	t.Logf("crashed (SIGKILL) and started again in %v", time.Since(began).Round(time.Millisecond))
	if n := rows(); n != 2 {
		t.Fatalf("%d rows after the crash, want 2: a committed row was lost", n)
	}

	s.Stop(t)
	probe, err := sql.Open("mysql", s.AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if err := probe.PingContext(ctx); err == nil {
		t.Fatal("the server answers after Stop")
	}
	s.Start(t)
	if n := rows(); n != 2 {
		t.Fatalf("%d rows after Stop and Start, want 2", n)
	}
}
