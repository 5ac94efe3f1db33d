package e2e_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuegen/queuegen/integration/e2e/payload"
	"github.com/queuegen/queuegen/queue"
)

// TestTxWorker: the handler's writes commit with the job's completion; a
// failing handler's writes are rolled back while its failure is recorded;
// a panic fails the attempt; every job is worked once per attempt.
func TestTxWorker(t *testing.T) {
	eachTx(t, txWorker[pgx.Tx], txWorker[*sql.Tx])
}

func txWorker[Tx any](t *testing.T, e *engine, x *txEngine[Tx]) {
	ctx := context.Background()
	e.exec(t, "CREATE TABLE rendered (n BIGINT PRIMARY KEY)")
	q := x.q
	ids := map[int]int64{}
	for _, n := range []int{1, 2, 3, 4, 5} {
		res, err := q.Push(ctx, payload.Task{Name: "render", N: n})
		if err != nil {
			t.Fatal(err)
		}
		ids[n] = res.ID
	}
	retryAt := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	var handled atomic.Int64
	w := q.Worker(func(ctx context.Context, tx Tx, job *queue.Job[payload.Task]) error {
		defer handled.Add(1)
		if err := x.exec(ctx, tx, "INSERT INTO rendered VALUES (?)", job.Payload.N); err != nil {
			return err
		}
		switch job.Payload.N {
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
	if n := e.count(t, "SELECT count(*) FROM rendered"); n != 2 {
		t.Errorf("%d rows written; want the two successes' writes only", n)
	}
	if n := e.count(t, "SELECT count(*) FROM txtask_queue WHERE state = 'succeeded'"); n != 2 {
		t.Errorf("%d succeeded, want 2", n)
	}
	job := func(n int) *queue.Job[payload.Task] {
		j, err := q.Get(ctx, ids[n])
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	if errs := job(3).Errors; len(errs) != 1 || errs[0] != "renderer crashed" {
		t.Errorf("failed job's errors = %q", errs)
	}
	if errs := job(4).Errors; len(errs) != 1 || !strings.Contains(errs[0], "panic: renderer panicked") {
		t.Errorf("panicked job's errors = %q", errs)
	}
	for _, n := range []int{3, 4, 5} {
		if j := job(n); j.State != queue.StateAvailable || j.Attempt != 1 || !j.RunAfter.After(time.Now()) {
			t.Errorf("job %d = %+v; want waiting to retry, attempt 1 recorded", n, j)
		}
	}
	if at := job(5).RunAfter; !at.Equal(retryAt) {
		t.Errorf("RetryAt(%v) made the job due at %v", retryAt, at)
	}
}

// TestTxWorkerShutdownReturnsTheJob: a handler still running after the
// grace period is cancelled; its transaction rolls back and the job is
// available again as if never claimed.
//
// Run gives the handlers three quarters of ShutdownTimeout, cancels them,
// and waits what is left of it for them to return. With a timeout of
// 200 ms that was 50 ms, less when the first timer fired late: on a loaded
// machine (under -race) the handler's goroutine, woken by the
// cancellation, did not return within it once, and Run reported it as a
// handler that ignored cancellation. The timeout is 4 s: 1 s for a
// goroutine to be scheduled and return.
func TestTxWorkerShutdownReturnsTheJob(t *testing.T) {
	eachTx(t, txWorkerShutdownReturnsTheJob[pgx.Tx], txWorkerShutdownReturnsTheJob[*sql.Tx])
}

func txWorkerShutdownReturnsTheJob[Tx any](t *testing.T, e *engine, x *txEngine[Tx]) {
	ctx := context.Background()
	q := x.q
	res, _ := q.Push(ctx, task("slow"))
	started := make(chan struct{})
	w := q.Worker(func(ctx context.Context, tx Tx, job *queue.Job[payload.Task]) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}, queue.ShutdownTimeout(4*time.Second), queue.PollInterval(50*time.Millisecond), queue.Logger(quiet))
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

// TestTxWorkerJobTimeout: a handler that runs past JobTimeout has its
// context cancelled, and the attempt fails with a TimeoutError recorded in
// the claiming transaction (the job waits to be retried); Hooks.Depth is
// fed every StatsInterval, as a lease worker's is.
func TestTxWorkerJobTimeout(t *testing.T) {
	eachTx(t, txWorkerJobTimeout[pgx.Tx], txWorkerJobTimeout[*sql.Tx])
}

func txWorkerJobTimeout[Tx any](t *testing.T, e *engine, x *txEngine[Tx]) {
	ctx := context.Background()
	q := x.q
	res, err := q.Push(ctx, task("hangs"))
	if err != nil {
		t.Fatal(err)
	}
	var handled, depths atomic.Int64
	w := q.Worker(func(ctx context.Context, tx Tx, job *queue.Job[payload.Task]) error {
		defer handled.Add(1)
		<-ctx.Done() // a call that honours its context, hung
		return ctx.Err()
	}, queue.JobTimeout(100*time.Millisecond), queue.PollInterval(50*time.Millisecond), queue.Logger(quiet),
		queue.StatsInterval(20*time.Millisecond), queue.WithHooks(queue.Hooks{
			Depth: func(name string, _ int64) {
				if name == q.QueueName() {
					depths.Add(1)
				}
			},
		}))
	stop := runWorker(t, w)
	eventually(t, 30*time.Second, "the handler timed out and Depth was fed", func() bool {
		return handled.Load() >= 1 && depths.Load() >= 2
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	j, err := q.Get(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != queue.StateAvailable || j.Attempt != 1 || len(j.Errors) != 1 || j.Errors[0] != "job timed out after 100ms" {
		t.Errorf("after the timeout: state %s, attempt %d, errors %q; want available to retry, attempt 1, the timeout recorded",
			j.State, j.Attempt, j.Errors)
	}
}

// TestTxWorkerShutdownDoesNotHang: a handler that ignores its cancelled
// context does not hold Run past ShutdownTimeout: Run returns a
// ShutdownError counting it, and when the handler at last returns, its
// transaction rolls back and the job is available again.
func TestTxWorkerShutdownDoesNotHang(t *testing.T) {
	eachTx(t, txWorkerShutdownDoesNotHang[pgx.Tx], txWorkerShutdownDoesNotHang[*sql.Tx])
}

func txWorkerShutdownDoesNotHang[Tx any](t *testing.T, e *engine, x *txEngine[Tx]) {
	ctx := context.Background()
	q := x.q
	res, err := q.Push(ctx, task("stubborn"))
	if err != nil {
		t.Fatal(err)
	}
	started, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
	w := q.Worker(func(ctx context.Context, tx Tx, job *queue.Job[payload.Task]) error {
		defer close(returned)
		close(started)
		<-release // deaf to its context
		return nil
	}, queue.ShutdownTimeout(300*time.Millisecond), queue.PollInterval(50*time.Millisecond), queue.Logger(quiet))
	stop := runWorker(t, w)
	<-started
	done := make(chan error, 1)
	go func() { done <- stop() }()
	var serr *queue.ShutdownError
	select {
	case err := <-done:
		if !errors.As(err, &serr) || serr.Running != 1 {
			t.Errorf("Run returned %v; want a ShutdownError with one handler running", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still running 10s after a shutdown of 300ms")
	}
	close(release)
	<-returned
	eventually(t, 10*time.Second, "the job available again", func() bool {
		j, err := q.Get(ctx, res.ID)
		return err == nil && j.State == queue.StateAvailable && j.Attempt == 0
	})
}
