package e2e_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuegen/queuegen/integration/e2e/payload"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/queue"
)

// The archive (on_success: archive) suite runs, as the other feature
// suites do, on the engines of this run (PostgreSQL and MySQL), against
// queues archtask (lease mode, 2 days' retention) and txarchtask
// (transaction mode) of each engine's e2e spec. SQL Server's archive is
// checked by golden files, compiling and tsql-check (no server here).

// eachArchive runs test once per engine of this run, in parallel subtests
// named after the engines, each with a fresh migrated database.
func eachArchive(t *testing.T, test func(t *testing.T, e *engine)) {
	t.Helper()
	t.Parallel()
	for _, name := range dbtest.ThisRun() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t, name)
			if e.archived == nil {
				t.Fatalf("%s has no archive queue in the e2e suite", name)
			}
			test(t, e)
		})
	}
}

// archivePartitions lists the partitions of e's archive table, by name.
func archivePartitions(t *testing.T, e *engine, table string) []string {
	t.Helper()
	rows, err := e.db.SQL.Query(e.placeholders(e.sql(`SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
WHERE i.inhparent = ?::regclass ORDER BY 1`, `SELECT PARTITION_NAME FROM information_schema.PARTITIONS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY PARTITION_ORDINAL_POSITION`, "")), table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	return names
}

// TestArchiveMovesCompletedJobs: Complete and CompleteMany move jobs from
// the queue's table to its archive, succeeded, finished and without a
// lease, in one change; a stale completion (an old attempt) moves
// nothing; Get reads an archived job; failed jobs stay in the queue.
func TestArchiveMovesCompletedJobs(t *testing.T) {
	eachArchive(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.archived
		for i := range 4 {
			if _, err := q.Push(ctx, payload.Task{Name: fmt.Sprint("job-", i)}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := q.Claim(ctx, "node", 4)
		if err != nil || len(got) != 4 {
			t.Fatalf("claim = %d, %v", len(got), err)
		}
		stale := *got[0]
		stale.Attempt--
		if err := q.Complete(ctx, &stale); err == nil {
			t.Errorf("a stale completion succeeded")
		}
		if n, err := q.CompleteMany(ctx, []*queue.Job[payload.Task]{&stale}); err != nil || n != 0 {
			t.Errorf("a stale CompleteMany = %d, %v", n, err)
		}
		if n := e.count(t, "SELECT COUNT(*) FROM archtask_queue_archive"); n != 0 {
			t.Errorf("stale completions archived %d jobs", n)
		}
		if err := q.Complete(ctx, got[0]); err != nil {
			t.Fatal(err)
		}
		if err := q.Complete(ctx, got[0]); err == nil {
			t.Errorf("a second completion of an archived job succeeded")
		}
		if n, err := q.CompleteMany(ctx, got[1:3]); err != nil || n != 2 {
			t.Fatalf("CompleteMany = %d, %v", n, err)
		}
		if _, err := q.Fail(ctx, got[3], fmt.Errorf("boom")); err != nil {
			t.Fatal(err)
		}
		if n := e.count(t, "SELECT COUNT(*) FROM archtask_queue"); n != 1 {
			t.Errorf("the queue's table holds %d jobs, want the failed one", n)
		}
		if n := e.count(t, `SELECT COUNT(*) FROM archtask_queue_archive
WHERE state = 'succeeded' AND finished_at IS NOT NULL AND locked_by IS NULL AND locked_until IS NULL AND attempt = 1`); n != 3 {
			t.Errorf("the archive holds %d succeeded jobs, want 3", n)
		}
		job, err := q.Get(ctx, got[1].ID)
		if err != nil || job.State != queue.StateSucceeded || job.Payload.Name != got[1].Payload.Name || job.LockedBy != "" {
			t.Errorf("Get of an archived job = %+v, %v", job, err)
		}
		if job, err := q.Get(ctx, got[3].ID); err != nil || job.State != queue.StateAvailable {
			t.Errorf("Get of the failed job = %+v, %v", job, err)
		}
		if _, err := q.Get(ctx, 1<<40); err == nil {
			t.Errorf("Get of a job that never was succeeded")
		}
	})
}

// TestArchiveInTransactionMode: a transaction-mode queue's completions move
// jobs to the archive within the caller's transaction: rolled back, the
// jobs are in the queue again and the archive holds none; committed, they
// are archived.
func TestArchiveInTransactionMode(t *testing.T) {
	eachArchive(t, func(t *testing.T, e *engine) {
		if e.pg != nil {
			archiveInTx(t, e, &txEngine[pgx.Tx]{q: e.pgArchived, driver: e.pg.driver})
		} else {
			archiveInTx(t, e, &txEngine[*sql.Tx]{q: e.stdArchived, driver: e.std.driver})
		}
	})
}

func archiveInTx[Tx any](t *testing.T, e *engine, x *txEngine[Tx]) {
	ctx := context.Background()
	q := x.q
	for i := range 3 {
		if _, err := q.Push(ctx, payload.Task{Name: fmt.Sprint("job-", i)}); err != nil {
			t.Fatal(err)
		}
	}
	tx := x.begin(t)
	got, err := q.Claim(ctx, tx, 2)
	if err != nil || len(got) != 2 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	if err := q.Complete(ctx, tx, got[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := q.CompleteMany(ctx, tx, got[1:]); err != nil || n != 1 {
		t.Fatalf("CompleteMany = %d, %v", n, err)
	}
	if err := x.driver.Rollback(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, "SELECT COUNT(*) FROM txarchtask_queue_archive"); n != 0 {
		t.Errorf("the archive holds %d jobs after a rollback", n)
	}
	tx = x.begin(t)
	if got, err = q.Claim(ctx, tx, 3); err != nil || len(got) != 3 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	if n, err := q.CompleteMany(ctx, tx, got); err != nil || n != 3 {
		t.Fatalf("CompleteMany = %d, %v", n, err)
	}
	if err := x.driver.Commit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, "SELECT COUNT(*) FROM txarchtask_queue"); n != 0 {
		t.Errorf("the queue's table holds %d jobs after the commit", n)
	}
	if job, err := q.Get(ctx, got[2].ID); err != nil || job.State != queue.StateSucceeded || job.Attempt != 1 {
		t.Errorf("Get of an archived job = %+v, %v", job, err)
	}
}

// TestArchivePurgeKeepsPartitions: Purge makes the partitions of today and
// the next two days, drops whole the partitions past retention (2d here),
// counting their rows, and does nothing while another node holds the
// archive's maintenance lock. On PostgreSQL a day the default partition
// already holds rows of gets no partition, and old rows of the default
// partition are deleted; on MySQL the last partition, pmax, is split, its
// rows going to the first new partition (today's).
func TestArchivePurgeKeepsPartitions(t *testing.T) {
	eachArchive(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.archived
		const table = "archtask_queue_archive"
		if _, err := q.Push(ctx, payload.Task{Name: "early"}); err != nil {
			t.Fatal(err)
		}
		claimed, err := q.Claim(ctx, "node", 1)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim = %d, %v", len(claimed), err)
		}
		if err := q.Complete(ctx, claimed[0]); err != nil { // into the default partition, or pmax: no day has one yet
			t.Fatal(err)
		}

		// Another node maintaining the queue: this one does nothing.
		var release func() error
		if e.name == dburl.PostgreSQL {
			tx, err := e.db.SQL.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('queuegen maintenance archtask_queue', 0))"); err != nil {
				t.Fatal(err)
			}
			release = tx.Rollback
		} else {
			conn, err := e.db.SQL.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(ctx, "DO GET_LOCK('queuegen archive archtask_queue_archive', 0)"); err != nil {
				t.Fatal(err)
			}
			release = func() error {
				defer conn.Close()
				_, err := conn.ExecContext(ctx, "DO RELEASE_LOCK('queuegen archive archtask_queue_archive')")
				return err
			}
		}
		if n, err := q.Purge(ctx, 100); err != nil || n != 0 || len(archivePartitions(t, e, table)) != 1 {
			t.Errorf("Purge beside another node's = %d, %v; partitions %v", n, err, archivePartitions(t, e, table))
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}

		var today time.Time
		if err := e.db.SQL.QueryRow(e.sql("SELECT date_trunc('day', now() AT TIME ZONE 'UTC')", "SELECT CAST(UTC_DATE() AS DATETIME)", "")).Scan(&today); err != nil {
			t.Fatal(err)
		}
		today = time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
		old := today.AddDate(0, 0, -5)
		insert := func(id int, at time.Time) {
			e.exec(t, "INSERT INTO "+table+" (id, state, attempt, max_attempts, run_after, created_at, finished_at, payload) VALUES (?, 'succeeded', 1, 3, ?, ?, ?, '{}')", -id, at, at, at)
		}
		var want []string
		if e.name == dburl.PostgreSQL {
			day := func(d int) string { return table + "_p" + today.AddDate(0, 0, d).Format("20060102") }
			// An old day with a partition of its own (5 jobs), and older
			// rows in the default partition (2 jobs, 9 days ago).
			e.exec(t, fmt.Sprintf("CREATE TABLE %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')",
				day(-5), table, old.Format(time.RFC3339), old.AddDate(0, 0, 1).Format(time.RFC3339)))
			want = []string{table + "_default", day(1), day(2)} // today's rows are in the default already
		} else {
			day := func(d int) string { return "p" + today.AddDate(0, 0, d).Format("20060102") }
			// An old day's partition, which takes every row before its
			// day's end: the 5 jobs of that day and 2 of 9 days ago.
			e.exec(t, fmt.Sprintf("ALTER TABLE %s REORGANIZE PARTITION pmax INTO (PARTITION %s VALUES LESS THAN ('%s'), PARTITION pmax VALUES LESS THAN (MAXVALUE))",
				table, day(-5), old.AddDate(0, 0, 1).Format(time.DateTime)))
			want = []string{day(0), day(1), day(2), "pmax"} // today's row is in today's partition, split from pmax
		}
		for i := range 5 {
			insert(1+i, old.Add(time.Hour))
		}
		insert(6, today.AddDate(0, 0, -9))
		insert(7, today.AddDate(0, 0, -9))

		n, err := q.Purge(ctx, 100)
		if err != nil || n != 7 {
			t.Errorf("Purge = %d, %v; want the 7 old jobs", n, err)
		}
		if got := archivePartitions(t, e, table); !slices.Equal(got, want) {
			t.Errorf("partitions after Purge = %v, want %v", got, want)
		}
		if n := e.count(t, "SELECT COUNT(*) FROM "+table); n != 1 {
			t.Errorf("the archive holds %d jobs after Purge, want today's one", n)
		}
		if job, err := q.Get(ctx, claimed[0].ID); err != nil || job.State != queue.StateSucceeded {
			t.Errorf("Get of today's archived job after Purge = %+v, %v", job, err)
		}
		// Purge again: nothing to do.
		if n, err := q.Purge(ctx, 100); err != nil || n != 0 {
			t.Errorf("a second Purge = %d, %v", n, err)
		}
		if got := archivePartitions(t, e, table); !slices.Equal(got, want) {
			t.Errorf("partitions after a second Purge = %v, want %v", got, want)
		}
	})
}

// TestArchiveNeverInBothNorNeither: while workers complete jobs one by one
// and in batches, a reader never finds a job in both the queue's table and
// the archive, nor in neither: one statement counting both tables always
// counts every job once, and Get always finds each.
func TestArchiveNeverInBothNorNeither(t *testing.T) {
	eachArchive(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.archived
		const n = 60
		for i := range n {
			if _, err := q.Push(ctx, payload.Task{Name: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := q.Claim(ctx, "node", n)
		if err != nil || len(got) != n {
			t.Fatalf("claim = %d, %v", len(got), err)
		}
		lo, hi := got[0].ID, got[0].ID
		for _, j := range got {
			lo, hi = min(lo, j.ID), max(hi, j.ID)
		}
		done := make(chan error, 1)
		go func() {
			for i := 0; i < n; {
				if i%3 == 0 {
					if err := q.Complete(ctx, got[i]); err != nil {
						done <- err
						return
					}
					i++
					continue
				}
				k := min(i+4, n)
				if m, err := q.CompleteMany(ctx, got[i:k]); err != nil || m != int64(k-i) {
					done <- fmt.Errorf("CompleteMany = %d, %v", m, err)
					return
				}
				i = k
			}
			done <- nil
		}()
		for reads := 0; ; reads++ {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				if c := e.count(t, "SELECT COUNT(*) FROM archtask_queue_archive"); c != n {
					t.Errorf("the archive holds %d jobs, want %d", c, n)
				}
				t.Logf("%d reads while completing", reads)
				return
			default:
			}
			if c := e.count(t, "SELECT (SELECT COUNT(*) FROM archtask_queue WHERE id BETWEEN ? AND ?) + (SELECT COUNT(*) FROM archtask_queue_archive WHERE id BETWEEN ? AND ?)", lo, hi, lo, hi); c != n {
				t.Fatalf("a read counted %d jobs in the two tables, want %d", c, n)
			}
			if _, err := q.Get(ctx, got[reads%n].ID); err != nil {
				t.Fatalf("Get of job %d while completing: %v", got[reads%n].ID, err)
			}
		}
	})
}
