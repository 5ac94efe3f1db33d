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
	for _, id := range []int64{1, 2, 3, 4} {
		q.Push(ctx, jobs.ReportPayload{ReportID: id})
	}
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
		}
		return nil
	}, queue.Concurrency(3), queue.PollInterval(50*time.Millisecond), queue.Logger(quiet))
	stop := runWorker(t, w)
	eventually(t, 30*time.Second, "all four handled", func() bool { return handled.Load() >= 4 })
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
	if n := count(t, db, "SELECT count(*) FROM report_queue WHERE state = 'available' AND attempt = 1 AND run_after > now()"); n != 2 {
		t.Errorf("%d jobs waiting to retry with attempt 1 recorded, want 2", n)
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
