package reliability_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuegen/queuegen/integration/reliability/jobs"
	"github.com/queuegen/queuegen/queue"
	"github.com/queuegen/queuegen/queue/queueimpl"
)

// drain pushes total jobs and times three workers working them all.
func drain(t *testing.T, tg *target, total int) time.Duration {
	t.Helper()
	pushWork(t, tg, total)
	start := time.Now()
	stop := runWorkers(t, tg, 3, 0)
	waitFinished(t, tg, "work_queue", 5*time.Minute)
	took := time.Since(start)
	stop()
	return took
}

// TestLongTransactionHoldsBackVacuum drains the same load twice: once
// normally, once while another session holds a REPEATABLE READ snapshot
// open. The snapshot keeps every claimed and deleted row version alive,
// so claims wade through index entries they cannot skip: the known MVCC
// failure mode of Postgres queues. The test requires no error and nothing
// lost, and reports the slowdown (README, "Guarantees"). PostgreSQL only:
// it is about PostgreSQL's MVCC.
func TestLongTransactionHoldsBackVacuum(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	total := scale(10000, 100000)

	base := prepare(t, postgres, "")
	baseline := drain(t, base, total)
	check(t, base, "baseline-drain", tally(t, base, "work_queue", total), exactlyOnce)

	held := prepare(t, postgres, "")
	conn, err := held.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM work_queue").Scan(&n); err != nil { // takes the snapshot
		t.Fatal(err)
	}
	slowed := drain(t, held, total)
	tx.Rollback(ctx)
	check(t, held, "drain-with-long-transaction", tally(t, held, "work_queue", total), exactlyOnce)
	t.Logf("drain of %d jobs: %s normally, %s with a transaction holding its snapshot (%.1fx)", total, baseline.Round(time.Millisecond), slowed.Round(time.Millisecond), slowed.Seconds()/baseline.Seconds())
}

// spyQueue wraps a lease accessor and records what the worker passes to
// the database: a worker must never send its own clock, so that leases
// are judged by the database clock alone.
type spyQueue struct {
	*jobs.WorkQueue
	sentClock   atomic.Bool
	failExtends atomic.Bool
}

func (s *spyQueue) Claim(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]*queue.Job[jobs.WorkPayload], error) {
	if o, _ := queueimpl.ResolveClaim(time.Minute, opts); o.Now != nil {
		s.sentClock.Store(true)
	}
	return s.WorkQueue.Claim(ctx, node, max, opts...)
}

func (s *spyQueue) ExtendMany(ctx context.Context, batch []*queue.Job[jobs.WorkPayload], d time.Duration) ([]int64, error) {
	if s.failExtends.Load() {
		return nil, errors.New("the database is unreachable (simulated)")
	}
	return s.WorkQueue.ExtendMany(ctx, batch, d)
}

// TestClockSkew: leases are judged by the database clock, so a worker's
// own clock, however far off, can neither steal a live lease nor keep a
// dead one.
//   - The worker sends no time of its own with a claim (the spy checks),
//     snoozes by the database clock, and times its local view of a lease
//     with a monotonic duration from the claim.
//   - A job leased by another node, live by the database clock, is not
//     taken; a job whose lease expired by the database clock is.
//   - A worker whose heartbeat cannot reach the database gives its job
//     up when the lease runs out locally, and the job is claimed again
//     elsewhere once it expires in the database.
//
// PostgreSQL only (its spy wraps the PostgreSQL accessor).
func TestClockSkew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := prepare(t, postgres, "").pool
	q := jobs.NewWorkQueue(pool)
	live, _ := q.Push(ctx, jobs.WorkPayload{N: 1, Kind: "live"})
	expired, _ := q.Push(ctx, jobs.WorkPayload{N: 2, Kind: "expired"})
	snoozed, _ := q.Push(ctx, jobs.WorkPayload{N: 3, Kind: "snooze"})
	if got, err := q.Claim(ctx, "other-node", 2, queue.LeaseFor(time.Hour)); err != nil || len(got) != 2 {
		t.Fatalf("claim = %v, %v", got, err)
	}
	// By the database clock, job 2's lease expired a second ago.
	pool.Exec(ctx, "UPDATE work_queue SET locked_until = now() - interval '1 second' WHERE id = $1", expired.ID)

	spy := &spyQueue{WorkQueue: q}
	var handled sync.Map
	w := queue.NewWorker[jobs.WorkPayload](spy, func(ctx context.Context, job *queue.Job[jobs.WorkPayload]) error {
		handled.Store(job.ID, true)
		if job.Payload.Kind == "snooze" {
			return queue.SnoozeFor(time.Minute)
		}
		return nil
	}, queue.PollInterval(50*time.Millisecond), queue.Logger(quiet))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(runCtx) }()
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range []int64{expired.ID, snoozed.ID} {
		for {
			if _, ok := handled.Load(id); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d was not worked", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	time.Sleep(300 * time.Millisecond) // several more polls
	cancel()
	<-done
	if _, ok := handled.Load(live.ID); ok {
		t.Error("the worker took a job whose lease is live by the database clock")
	}
	if spy.sentClock.Load() {
		t.Error("the worker sent its own clock with a claim")
	}
	var delay float64
	pool.QueryRow(ctx, "SELECT extract(epoch FROM run_after - now()) FROM work_queue WHERE id = $1", snoozed.ID).Scan(&delay)
	if delay < 50 || delay > 61 {
		t.Errorf("snoozed for %.0fs by the database clock, want about 60s", delay)
	}

	// A worker cut off from the database gives its jobs up when their
	// leases run out by its own monotonic timer; another node then claims
	// them, once they expired in the database.
	tg2 := prepare(t, postgres, "")
	q2 := jobs.NewWorkQueue(tg2.pool)
	const cutOff = 20
	for i := range cutOff {
		q2.Push(ctx, jobs.WorkPayload{N: int64(i), Kind: "cut-off"})
	}
	cut := &spyQueue{WorkQueue: q2}
	cut.failExtends.Store(true)
	var gaveUp atomic.Int64
	cw := queue.NewWorker[jobs.WorkPayload](cut, func(ctx context.Context, _ *queue.Job[jobs.WorkPayload]) error {
		<-ctx.Done()
		gaveUp.Add(1)
		return ctx.Err()
	}, queue.Lease(time.Second), queue.Concurrency(cutOff), queue.Node("cut-off"), queue.PollInterval(time.Hour), queue.Logger(quiet))
	cutCtx, cancelCut := context.WithCancel(ctx)
	cutDone := make(chan struct{})
	go func() { defer close(cutDone); cw.Run(cutCtx) }()
	for end := time.Now().Add(20 * time.Second); gaveUp.Load() < cutOff; {
		if time.Now().After(end) {
			t.Fatalf("the cut-off worker kept %d jobs whose leases ran out", cutOff-gaveUp.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancelCut()
	<-cutDone
	stop := runWorkers(t, tg2, 1, 0)
	waitFinished(t, tg2, "work_queue", 30*time.Second)
	stop()
	// The cut-off worker may itself claim them again once they expired
	// (its slots free up when it gives them up), so they finish at
	// attempt 2 or later; never at the attempt whose lease it lost.
	if n := tg2.count(t, "SELECT count(*) FROM completed_log WHERE attempt >= 2"); n != cutOff {
		t.Errorf("%d jobs completed at attempt 2 or later, want all %d", n, cutOff)
	}
	check(t, tg2, "clock-skew", tally(t, tg2, "work_queue", cutOff), exactlyOnce)
}
