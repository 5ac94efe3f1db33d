package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/queue"
)

// The archive (on_success: archive) is PostgreSQL's: these tests run on
// PostgreSQL only, against queue archived of the e2e spec.

// archivePartitions lists the archive's partitions, by name.
func archivePartitions(t *testing.T, db *pgxpool.Pool) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
WHERE i.inhparent = 'archived_queue_archive'::regclass ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// count is a count(*) query's answer.
func count(t *testing.T, db *pgxpool.Pool, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestArchiveMovesCompletedJobs: Complete and CompleteMany move jobs from
// the queue's table to its archive, succeeded, finished and without a
// lease, in one statement; a stale completion (an old attempt) moves
// nothing; Get reads an archived job; failed jobs stay in the queue.
func TestArchiveMovesCompletedJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewArchivedQueue(db)
	for i := range 4 {
		if _, err := q.Push(ctx, jobs.ArchivedPayload{Name: fmt.Sprint("job-", i)}); err != nil {
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
	if err := q.Complete(ctx, got[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := q.CompleteMany(ctx, got[1:3]); err != nil || n != 2 {
		t.Fatalf("CompleteMany = %d, %v", n, err)
	}
	if _, err := q.Fail(ctx, got[3], fmt.Errorf("boom")); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, "SELECT count(*) FROM archived_queue"); n != 1 {
		t.Errorf("the queue's table holds %d jobs, want the failed one", n)
	}
	if n := count(t, db, `SELECT count(*) FROM archived_queue_archive
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
}

// TestArchivePurgeKeepsPartitions: Purge makes the partitions of today and
// the next two days, except a day the default partition already holds rows
// of; drops whole the partitions past retention (2d here), counting their
// rows; deletes old rows from the default partition; and does nothing while
// another node holds the queue's maintenance lock.
func TestArchivePurgeKeepsPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewArchivedQueue(db)
	if _, err := q.Push(ctx, jobs.ArchivedPayload{Name: "early"}); err != nil {
		t.Fatal(err)
	}
	claimed, err := q.Claim(ctx, "node", 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %d, %v", len(claimed), err)
	}
	if err := q.Complete(ctx, claimed[0]); err != nil { // into the default partition: no day has one yet
		t.Fatal(err)
	}

	// Another node maintaining the queue: this one does nothing.
	holder, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('queuegen maintenance archived_queue', 0))"); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Purge(ctx, 100); err != nil || n != 0 || len(archivePartitions(t, db)) != 1 {
		t.Errorf("Purge beside another node's = %d, %v; partitions %v", n, err, archivePartitions(t, db))
	}
	holder.Rollback(ctx)

	var today time.Time
	if err := db.QueryRow(ctx, "SELECT date_trunc('day', now() AT TIME ZONE 'UTC')").Scan(&today); err != nil {
		t.Fatal(err)
	}
	day := func(d int) string { return "archived_queue_archive_p" + today.AddDate(0, 0, d).Format("20060102") }
	// An old day with a partition of its own (5 jobs), and older rows in
	// the default partition (2 jobs, 9 days ago).
	old := today.AddDate(0, 0, -5)
	if _, err := db.Exec(ctx, fmt.Sprintf("CREATE TABLE %s PARTITION OF archived_queue_archive FOR VALUES FROM ('%s') TO ('%s')",
		day(-5), old.Format(time.RFC3339), old.AddDate(0, 0, 1).Format(time.RFC3339))); err != nil {
		t.Fatal(err)
	}
	insert := `INSERT INTO archived_queue_archive (id, state, attempt, max_attempts, finished_at, name)
SELECT -g, 'succeeded', 1, 3, $1::timestamptz, 'old' FROM generate_series(1, $2) AS g`
	if _, err := db.Exec(ctx, insert, old.Add(time.Hour), 5); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, insert, today.AddDate(0, 0, -9), 2); err != nil {
		t.Fatal(err)
	}

	n, err := q.Purge(ctx, 100)
	if err != nil || n != 7 {
		t.Errorf("Purge = %d, %v; want the 5 jobs of the dropped partition and the 2 old ones of the default", n, err)
	}
	want := []string{"archived_queue_archive_default", day(1), day(2)} // today's rows are in the default already
	if got := archivePartitions(t, db); !slices.Equal(got, want) {
		t.Errorf("partitions after Purge = %v, want %v", got, want)
	}
	if n := count(t, db, "SELECT count(*) FROM archived_queue_archive"); n != 1 {
		t.Errorf("the archive holds %d jobs after Purge, want today's one", n)
	}
	// Purge again: nothing to do.
	if n, err := q.Purge(ctx, 100); err != nil || n != 0 {
		t.Errorf("a second Purge = %d, %v", n, err)
	}
}

// TestArchiveInTransactionMode: a transaction-mode queue's completions move
// jobs to the archive within the caller's transaction: rolled back, the
// jobs are in the queue again and the archive holds none; committed, they
// are archived.
func TestArchiveInTransactionMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewTxarchivedQueue(db)
	for i := range 3 {
		if _, err := q.Push(ctx, jobs.TxarchivedPayload{Name: fmt.Sprint("job-", i)}); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
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
	tx.Rollback(ctx)
	if n := count(t, db, "SELECT count(*) FROM txarchived_queue_archive"); n != 0 {
		t.Errorf("the archive holds %d jobs after a rollback", n)
	}
	tx, err = db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = q.Claim(ctx, tx, 3); err != nil || len(got) != 3 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	if n, err := q.CompleteMany(ctx, tx, got); err != nil || n != 3 {
		t.Fatalf("CompleteMany = %d, %v", n, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, "SELECT count(*) FROM txarchived_queue"); n != 0 {
		t.Errorf("the queue's table holds %d jobs after the commit", n)
	}
	if job, err := q.Get(ctx, got[2].ID); err != nil || job.State != queue.StateSucceeded || job.Attempt != 1 {
		t.Errorf("Get of an archived job = %+v, %v", job, err)
	}
}
