package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuegen/queuegen/integration/reliability/jobs"
	"github.com/queuegen/queuegen/internal/pgtest"
	"github.com/queuegen/queuegen/queue"
)

// TestWorkerStartsWhileDatabaseDown: a worker with a stable node id first
// releases what its node left claimed; when the database cannot be
// reached then, it retries until it can, instead of giving up for good,
// and then works the queue. On every engine.
func TestWorkerStartsWhileDatabaseDown(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		server := privateServer(t, engine)
		tg := prepare(t, engine, server.address)
		total := 200
		pushWork(t, tg, total)
		server.stop()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var handled atomic.Int64
		w := tg.work.worker(func(context.Context, *queue.Job[work]) error {
			handled.Add(1)
			return nil
		}, queue.Node("restarting-node"), queue.PollInterval(100*time.Millisecond), queue.Logger(quiet))
		ran := make(chan error, 1)
		go func() { ran <- w.Run(ctx) }()
		time.Sleep(time.Second)
		select {
		case err := <-ran:
			t.Fatalf("the worker gave up while the database was down: %v", err)
		default:
		}
		server.start()
		waitFinished(t, tg, "work_queue", time.Minute)
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run = %v", err)
		}
		if handled.Load() < int64(total) {
			t.Errorf("handled %d of %d jobs", handled.Load(), total)
		}
	})
}

// refusingQueue is the work queue with completions that the database
// refuses, as when it is unreachable.
type refusingQueue struct {
	*jobs.WorkQueue
	refusing atomic.Bool
}

var errRefused = errors.New("the database refused the write (simulated)")

func (q *refusingQueue) CompleteMany(ctx context.Context, js []*queue.Job[jobs.WorkPayload]) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err // as a driver refuses a statement whose context has ended
	}
	if q.refusing.Load() {
		return 0, errRefused
	}
	return q.WorkQueue.CompleteMany(ctx, js)
}

// TestShutdownWhileWritesFail: while completions cannot be written,
// handlers still return at once (they hand their result over and free
// their slot), and a shutdown ends within ShutdownTimeout, saying how many
// finished jobs it could not record, which come back when their leases
// expire. PostgreSQL only: it is about the runtime, with the database
// refusal simulated around the PostgreSQL accessor.
func TestShutdownWhileWritesFail(t *testing.T) {
	t.Parallel()
	tg := prepare(t, postgres, "")
	pool := tg.pool
	pushWork(t, tg, 500)
	q := &refusingQueue{WorkQueue: jobs.NewWorkQueue(pool)}
	q.refusing.Store(true)
	var handled atomic.Int64
	const concurrency = 8
	w := queue.NewWorker[jobs.WorkPayload](q, func(context.Context, *queue.Job[jobs.WorkPayload]) error {
		handled.Add(1)
		return nil
	}, queue.Concurrency(concurrency), queue.FlushSize(10), queue.PollInterval(50*time.Millisecond),
		queue.ShutdownTimeout(time.Second), queue.Logger(quiet))
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for handled.Load() <= 2*concurrency && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := handled.Load(); n <= 2*concurrency {
		t.Fatalf("only %d jobs handled while completions failed: handlers are blocked holding their slots", n)
	}
	began := time.Now()
	cancel()
	err := <-ran
	took := time.Since(began)
	if took > 1500*time.Millisecond {
		t.Errorf("shutdown took %v with a 1s ShutdownTimeout", took)
	}
	var se *queue.ShutdownError
	if !errors.As(err, &se) || se.Running != 0 || se.Unwritten == 0 || !errors.Is(se.Err, errRefused) {
		t.Fatalf("Run = %v; want a ShutdownError with unwritten results and no running handler", err)
	}
	t.Logf("handled %d; shutdown in %v: %v", handled.Load(), took.Round(time.Millisecond), err)
	// The unrecorded jobs come back: a worker that can write finishes
	// every job.
	q.refusing.Store(false)
	runCtx, stop := context.WithCancel(context.Background())
	w2 := queue.NewWorker[jobs.WorkPayload](q, func(context.Context, *queue.Job[jobs.WorkPayload]) error { return nil },
		queue.PollInterval(100*time.Millisecond), queue.Logger(quiet))
	done := make(chan struct{})
	go func() { w2.Run(runCtx); close(done) }()
	waitFinished(t, tg, "work_queue", time.Minute)
	stop()
	<-done
}

// TestRecoveryAfterRestart: pushes arrive at a steady rate while the
// server is stopped for a few seconds and started again. Once it is back,
// workers claim again within their poll interval (their slots are not held
// by results waiting to be written), and the pickup latency returns to
// normal at once. The scenario reports the figures. PostgreSQL only, so
// far.
func TestRecoveryAfterRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster := pgtest.NewCluster(t)
	tg := prepare(t, postgres, cluster.URL())
	pool := tg.pool
	const poll = 200 * time.Millisecond
	q := jobs.NewWorkQueue(pool)
	var mu sync.Mutex
	var handledAt []time.Time
	var pickups []time.Duration // after the restart
	var up time.Time
	workCtx, stopWork := context.WithCancel(ctx)
	var workers sync.WaitGroup
	for i := range 4 {
		node := fmt.Sprintf("node-%d", i)
		w := q.Worker(func(ctx context.Context, job *queue.Job[jobs.WorkPayload]) error {
			record(ctx, tg, "work_queue", job.ID, job.Attempt, node)
			now := time.Now()
			mu.Lock()
			handledAt = append(handledAt, now)
			if !up.IsZero() && job.CreatedAt.After(up.Add(time.Second)) {
				pickups = append(pickups, now.Sub(job.CreatedAt))
			}
			mu.Unlock()
			return nil
		}, queue.Node(node), queue.Concurrency(8), queue.PollInterval(poll), queue.Logger(quiet))
		workers.Go(func() { w.Run(workCtx) })
	}
	pushCtx, stopPush := context.WithCancel(ctx)
	// Only acknowledged pushes are owed: a push whose reply was cut off by
	// the restart may or may not have committed, so the accounting is by
	// id (tallyAcked), not by a count that such a push would skew.
	var acked []int64
	var pushers sync.WaitGroup
	pushers.Go(func() {
		t := time.NewTicker(time.Second / 300)
		defer t.Stop()
		for {
			select {
			case <-pushCtx.Done():
				return
			case <-t.C:
			}
			c, cancel := context.WithTimeout(pushCtx, time.Second)
			if r, err := q.Push(c, jobs.WorkPayload{Kind: "ok"}); err == nil {
				acked = append(acked, r.ID)
			}
			cancel()
		}
	})
	time.Sleep(2 * time.Second)
	cluster.Stop(t)
	time.Sleep(time.Duration(scale(3, 20)) * time.Second)
	cluster.Start(t)
	mu.Lock()
	up = time.Now()
	mu.Unlock()
	time.Sleep(6 * time.Second)
	stopPush()
	pushers.Wait()
	waitFinished(t, tg, "work_queue", time.Minute)
	// A push whose client gave up on it (its reply late, past the
	// push's timeout) may still commit after the pushers stopped: the
	// server finishes the statement. Such a job, counted as unacknowledged,
	// is owed a run like any other: leave the workers time to take it.
	time.Sleep(2 * time.Second)
	waitFinished(t, tg, "work_queue", time.Minute)
	stopWork()
	workers.Wait()

	mu.Lock()
	defer mu.Unlock()
	var resumed time.Duration = -1
	for _, at := range handledAt {
		if at.After(up) {
			resumed = at.Sub(up)
			break
		}
	}
	slices.Sort(pickups)
	pct := func(p float64) time.Duration {
		if len(pickups) == 0 {
			return 0
		}
		return pickups[min(len(pickups)-1, int(p*float64(len(pickups))))]
	}
	route := ""
	if pgtest.ViaPgBouncer() {
		route = " (through PgBouncer)"
	}
	line := fmt.Sprintf("reliability restart-recovery%s: claiming %v after the database was back (poll %v); pickup p50 %v, p99 %v over %d jobs pushed after",
		route, resumed.Round(time.Millisecond), poll, pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), len(pickups))
	reportMu.Lock()
	report = append(report, line)
	reportMu.Unlock()
	t.Log(line)
	// Bounds loose enough for a loaded machine (the suite runs beside
	// others): the fault this guards against left workers idle for seconds
	// and the median pickup near the backoff.
	if resumed < 0 || resumed > poll+2*time.Second {
		t.Errorf("workers claimed again %v after the database was back; want within the poll interval (%v) and a reconnect", resumed, poll)
	}
	if p := pct(0.5); len(pickups) < 100 || p > poll+100*time.Millisecond {
		t.Errorf("pickup p50 %v over %d jobs after the restart; want within the poll interval %v", p, len(pickups), poll)
	}
	check(t, tg, "restart-steady-pushes", tallyAcked(t, tg, "work_queue", acked), atLeastOnce)
}
