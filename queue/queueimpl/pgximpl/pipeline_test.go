package pgximpl_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuegen/queuegen/internal/pgtest"
	"github.com/queuegen/queuegen/queue/queueimpl/pgximpl"
)

// The pipeline's tests run twice, the second time through PgBouncer in
// transaction mode, as the generated accessors' claims do.
func TestMain(m *testing.M) { os.Exit(pgtest.RunMainTwice(m)) }

// conns are n connections to a database of the test's own.
func conns(t *testing.T, n int) []*pgx.Conn {
	t.Helper()
	url := pgtest.URL(t)
	cs := make([]*pgx.Conn, n)
	for i := range cs {
		c, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		cs[i] = c
	}
	return cs
}

// count reads a pipeline's one-row, one-column answer to its end.
func count(ctx context.Context, p *pgximpl.Pipeline, sql string) (int64, error) {
	rows, err := p.Query(ctx, sql)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rows.Err()
}

// TestPipelineQueryReadsAfterTheLock: a Query queued behind an Exec that
// waits for a lock reads, once the lock is granted, what its holder
// committed in the meantime, and the batch's statements share one
// transaction (the lock and a local setting are gone after it). This is
// what a limited claim relies on: its count, after the claim lock, sees
// the claims that held the lock before it. A pipeline that sent its Query
// first, or whose statements shared a snapshot taken before the wait,
// would count 0.
func TestPipelineQueryReadsAfterTheLock(t *testing.T) {
	ctx := context.Background()
	cs := conns(t, 2)
	holder, c := cs[0], cs[1]
	if _, err := holder.Exec(ctx, `CREATE TABLE leased (id int)`); err != nil {
		t.Fatal(err)
	}
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7001)`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO leased VALUES (1), (2)`); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		n   int64
		err error
	}
	done := make(chan answer, 1)
	go func() {
		p := pgximpl.NewPipeline(c)
		if _, err := p.Exec(ctx, `SELECT pg_advisory_xact_lock(7001), set_config('queuegen.pipeline', 'in', true)`); err != nil {
			done <- answer{err: err}
			return
		}
		n, err := count(ctx, p, `SELECT count(*) FROM leased WHERE current_setting('queuegen.pipeline') = 'in'`)
		done <- answer{n, err}
	}()
	// The pipeline waits for the lock; the holder commits only then.
	for waiting := false; !waiting; {
		select {
		case a := <-done:
			t.Fatalf("the pipeline answered %d, %v while another transaction held its lock", a.n, a.err)
		case <-time.After(10 * time.Millisecond):
		}
		if err := holder.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND objid = 7001 AND NOT granted)`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil || a.n != 2 {
		t.Fatalf("the pipeline counted %d, %v after the lock; want the 2 rows its holder committed", a.n, a.err)
	}
	var setting string
	var held bool
	if err := c.QueryRow(ctx, `SELECT coalesce(current_setting('queuegen.pipeline', true), ''), EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND objid = 7001)`).Scan(&setting, &held); err != nil {
		t.Fatal(err)
	}
	if setting != "" || held {
		t.Fatalf("after the batch: setting %q, lock held %v; want its transaction ended", setting, held)
	}
}

// TestPipelineReportsAFailedCommit: the rows of a batch whose commit
// fails (here a deferred unique constraint) end in the commit's error, and
// nothing the batch wrote stays. Rows that returned the Query's rows
// without reading the batch's end would report a claim whose commit failed
// as taken.
func TestPipelineReportsAFailedCommit(t *testing.T) {
	ctx := context.Background()
	c := conns(t, 1)[0]
	if _, err := c.Exec(ctx, `CREATE TABLE once (k int, CONSTRAINT once_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)`); err != nil {
		t.Fatal(err)
	}
	p := pgximpl.NewPipeline(c)
	if _, err := p.Exec(ctx, `INSERT INTO once VALUES (1), (1)`); err != nil {
		t.Fatal(err)
	}
	n, err := count(ctx, p, `SELECT count(*) FROM once`)
	if err == nil {
		t.Fatalf("a batch whose commit failed read %d rows and no error", n)
	}
	var left int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM once`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d rows left by a batch whose commit failed", left)
	}
}

// TestPipelineReportsAQueuedStatementsError: an Exec's error is the
// Query's, and the connection is usable after it.
func TestPipelineReportsAQueuedStatementsError(t *testing.T) {
	ctx := context.Background()
	c := conns(t, 1)[0]
	p := pgximpl.NewPipeline(c)
	if _, err := p.Exec(ctx, `SELECT 1 / 0`); err != nil {
		t.Fatal(err)
	}
	if n, err := count(ctx, p, `SELECT 1`); err == nil {
		t.Fatalf("a batch whose first statement failed answered %d and no error", n)
	}
	var one int
	if err := c.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil || one != 1 {
		t.Fatalf("the connection after a failed batch: %d, %v", one, err)
	}
}
