package e2e_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuegen/queuegen/internal/e2e/jobs"
	"github.com/queuegen/queuegen/queue"
)

// TestTxWorker: the handler's writes commit with the job's completion; a
// failing handler's writes are rolled back while its failure is recorded;
// a panic fails the attempt; every job is worked once per attempt.
func TestTxWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	if _, err := db.Exec(ctx, "CREATE TABLE rendered (report_id bigint PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	q := jobs.NewReportQueue(db)
	for _, id := range []int64{1, 2, 3, 4, 5} {
		q.Push(ctx, jobs.ReportPayload{ReportID: id})
	}
	retryAt := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	var handled atomic.Int64
	w := q.Worker(func(ctx context.Context, tx pgx.Tx, job *queue.Job[jobs.ReportPayload]) error {
		defer handled.Add(1)
		if _, err := tx.Exec(ctx, "INSERT INTO rendered VALUES ($1)", job.Payload.ReportID); err != nil {
			return err
		}
		switch job.Payload.ReportID {
		case 3:
			return errors.New("renderer crashed")
		case 4:
			panic("renderer panicked")
		case 5:
			return queue.RetryAt(retryAt, errors.New("renderer busy"))
		}
		return nil
	}, queue.Concurrency(3), queue.PollInterval(50*time.Millisecond), queue.Logger(quiet))
	stop := runWorker(t, w)
	eventually(t, 30*time.Second, "all five handled", func() bool { return handled.Load() >= 5 })
	stop()
	if n := count(t, db, "SELECT count(*) FROM rendered"); n != 2 {
		t.Errorf("%d rows written; want the two successes' writes only", n)
	}
	if n := count(t, db, "SELECT count(*) FROM report_queue WHERE state = 'succeeded'"); n != 2 {
		t.Errorf("%d succeeded, want 2", n)
	}
	var errs []string
	db.QueryRow(ctx, "SELECT errors FROM report_queue WHERE payload->>'report_id' = '3'").Scan(&errs)
	if len(errs) != 1 || errs[0] != "renderer crashed" {
		t.Errorf("failed job's errors = %q", errs)
	}
	db.QueryRow(ctx, "SELECT errors FROM report_queue WHERE payload->>'report_id' = '4'").Scan(&errs)
	if len(errs) != 1 || !strings.Contains(errs[0], "panic: renderer panicked") {
		t.Errorf("panicked job's errors = %q", errs)
	}
	if n := count(t, db, "SELECT count(*) FROM report_queue WHERE state = 'available' AND attempt = 1 AND run_after > now()"); n != 3 {
		t.Errorf("%d jobs waiting to retry with attempt 1 recorded, want 3", n)
	}
	var runAfter time.Time
	db.QueryRow(ctx, "SELECT run_after FROM report_queue WHERE payload->>'report_id' = '5'").Scan(&runAfter)
	if !runAfter.Equal(retryAt) {
		t.Errorf("RetryAt(%v) made the job due at %v", retryAt, runAfter)
	}
}

// TestTxWorkerShutdownReturnsTheJob: a handler still running after the
// grace period is cancelled; its transaction rolls back and the job is
// available again as if never claimed.
func TestTxWorkerShutdownReturnsTheJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewReportQueue(db)
	res, _ := q.Push(ctx, jobs.ReportPayload{ReportID: 9})
	started := make(chan struct{})
	w := q.Worker(func(ctx context.Context, tx pgx.Tx, job *queue.Job[jobs.ReportPayload]) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}, queue.ShutdownTimeout(200*time.Millisecond), queue.PollInterval(50*time.Millisecond), queue.Logger(quiet))
	stop := runWorker(t, w)
	<-started
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	j, err := q.Get(ctx, res.ID)
	if err != nil || j.State != queue.StateAvailable || j.Attempt != 0 || len(j.Errors) != 0 {
		t.Errorf("after shutdown: %+v, %v; want available, never attempted", j, err)
	}
}

// TestDepthLeavesOutHeldJobs: a job claimed in a transaction still open is
// not counted as due by Depth, though other sessions still see its row as
// available; once the transaction ends it counts again.
func TestDepthLeavesOutHeldJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewReportQueue(db)
	for _, id := range []int64{1, 2} {
		if _, err := q.Push(ctx, jobs.ReportPayload{ReportID: id}); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := q.Claim(ctx, tx, 1); err != nil || len(got) != 1 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	if n, err := q.Depth(ctx); err != nil || n != 1 {
		t.Errorf("Depth with one job held = %d, %v; want 1", n, err)
	}
	tx.Rollback(ctx)
	if n, err := q.Depth(ctx); err != nil || n != 2 {
		t.Errorf("Depth after the rollback = %d, %v; want 2", n, err)
	}
}
