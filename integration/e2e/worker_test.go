package e2e_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuegen/queuegen/integration/e2e/payload"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/spec"
	"github.com/queuegen/queuegen/queue"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// eventually polls cond until it holds or the (generous) timeout passes.
// It bounds a test's running time; it does not measure speed.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runWorker runs w until the test ends (or stop is called) and reports
// Run's error.
func runWorker(t *testing.T, w interface{ Run(context.Context) error }) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-errc })
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

func TestWorkerWorksEveryJobWithinItsConcurrency(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		q := e.task
		const total = 300
		pushTasks(t, q, total)
		var inFlight, peak, handled atomic.Int64
		var batches sync.Map
		w := q.Worker(func(ctx context.Context, job *queue.Job[payload.Task]) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(2 * time.Millisecond)
			handled.Add(1)
			return nil
		}, queue.Concurrency(5), queue.Logger(quiet), queue.WithHooks(queue.Hooks{
			Batch: func(_ string, kind string, size int) {
				v, _ := batches.LoadOrStore(kind, new(atomic.Int64))
				v.(*atomic.Int64).Add(int64(size))
			},
		}))
		stop := runWorker(t, w)
		eventually(t, 30*time.Second, "every job completed", func() bool { return e.count(t, "SELECT count(*) FROM task_queue") == 0 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if handled.Load() != total {
			t.Errorf("handled %d jobs, want %d", handled.Load(), total)
		}
		if p := peak.Load(); p > 5 || p < 2 {
			t.Errorf("peak concurrency %d, want between 2 and the limit 5", p)
		}
		for _, kind := range []string{"claim", "complete"} {
			v, _ := batches.Load(kind)
			if v == nil || v.(*atomic.Int64).Load() != total {
				t.Errorf("Batch hook saw %v %s jobs, want %d", v, kind, total)
			}
		}
	})
}

// TestWorkerRunsHandlersAtOnce: handlers that block all run at once, up to
// TestWorkerWritesResultsOnceItsHandlersAreIdle: a result waits up to
// FlushInterval for others to share its write, but once none of the
// worker's handlers is running no other will come, and it is written at
// once. With FlushInterval a minute, the job's completion must reach the
// database well within it (a completer that waits out the interval fails).
func TestWorkerWritesResultsOnceItsHandlersAreIdle(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		q := e.task
		pushTasks(t, q, 1)
		w := q.Worker(func(ctx context.Context, job *queue.Job[payload.Task]) error { return nil },
			queue.FlushInterval(time.Minute), queue.Logger(quiet))
		runWorker(t, w)
		eventually(t, 30*time.Second, "the job's completion written before its FlushInterval", func() bool {
			return e.count(t, "SELECT count(*) FROM task_queue") == 0
		})
	})
}

// the worker's concurrency: each of these waits until all ten are running.
func TestWorkerRunsHandlersAtOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		q := e.task
		const n = 10
		pushTasks(t, q, n)
		var running sync.WaitGroup
		running.Add(n)
		all := make(chan struct{})
		go func() { running.Wait(); close(all) }()
		var timedOut atomic.Int64
		w := q.Worker(func(ctx context.Context, job *queue.Job[payload.Task]) error {
			running.Done()
			select {
			case <-all:
			case <-time.After(10 * time.Second):
				timedOut.Add(1)
			}
			return nil
		}, queue.Concurrency(n), queue.Logger(quiet))
		runWorker(t, w)
		eventually(t, 30*time.Second, "every job completed", func() bool { return e.count(t, "SELECT count(*) FROM task_queue") == 0 })
		if k := timedOut.Load(); k > 0 {
			t.Errorf("%d handlers waited 10 s for the others to start: the worker did not run %d at once", k, n)
		}
	})
}

func TestWorkerOutcomes(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		ids := map[string]int64{}
		for _, name := range []string{"ok", "fail", "last", "snooze", "retryat", "discard", "panic", "garbled", "someday"} {
			opts := []queue.PushOption{}
			if name == "last" {
				opts = append(opts, queue.MaxAttempts(1))
			}
			res, err := q.Push(ctx, task(name), opts...)
			if err != nil {
				t.Fatal(err)
			}
			ids[name] = res.ID
		}
		retryAt := time.Now().Add(time.Hour).Truncate(time.Microsecond) // both engines keep microseconds
		var seen sync.Map
		var outcomes sync.Map
		w := q.Worker(func(ctx context.Context, job *queue.Job[payload.Task]) error {
			seen.Store(job.Payload.Name, true)
			switch job.Payload.Name {
			case "fail", "last":
				return errors.New("smtp: 451 try later")
			case "snooze":
				return queue.SnoozeFor(time.Hour)
			case "retryat":
				return queue.RetryAt(retryAt, errors.New("rate limited"))
			case "discard":
				return queue.Discard(errors.New("bad address"))
			case "panic":
				var m map[string]int
				m["boom"]++ // a real panic: assignment to a nil map
			case "someday":
				// Past what MySQL's and SQL Server's times hold: the end
				// of year 9999 instead, not a failure no database takes.
				return queue.RetryAt(time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC), errors.New("not this millennium"))
			case "garbled":
				// PostgreSQL refuses NUL and invalid UTF-8 in text: written
				// as they are, they would fail the batch again and again.
				return errors.New("body: \x00\xff")
			}
			return nil
		}, queue.Logger(quiet), queue.WithHooks(queue.Hooks{
			JobFinished: func(_ context.Context, j queue.JobInfo, o queue.Outcome, _ time.Duration, _ error) {
				outcomes.Store(j.ID, o)
			},
		}))
		stop := runWorker(t, w)
		eventually(t, 30*time.Second, "every job handled once", func() bool {
			n := 0
			seen.Range(func(any, any) bool { n++; return true })
			return n == len(ids)
		})
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		get := func(name string) *queue.Job[payload.Task] {
			j, err := q.Get(ctx, ids[name])
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return j
		}
		if _, err := q.Get(ctx, ids["ok"]); err == nil {
			t.Errorf("the completed job is still there")
		}
		if j := get("fail"); j.State != queue.StateAvailable || len(j.Errors) != 1 || j.Errors[0] != "smtp: 451 try later" || j.Attempt != 1 {
			t.Errorf("failed job = %+v", j)
		}
		if j := get("last"); j.State != queue.StateDead || len(j.Errors) != 1 {
			t.Errorf("job failing its last attempt = %+v", j)
		}
		if j := get("snooze"); j.State != queue.StateAvailable || j.MaxAttempts != 4 || time.Until(j.RunAfter) < 50*time.Minute {
			t.Errorf("snoozed job = %+v", j)
		}
		if j := get("retryat"); j.State != queue.StateAvailable || j.Errors[0] != "rate limited" || !j.RunAfter.Equal(retryAt) {
			t.Errorf("retry-at job = %+v, want run_after exactly %v", j, retryAt)
		}
		if j := get("discard"); j.State != queue.StateDead || j.Errors[0] != "bad address" {
			t.Errorf("discarded job = %+v", j)
		}
		if j := get("panic"); j.State != queue.StateAvailable || !strings.Contains(j.Errors[0], "panic: assignment to entry in nil map") || !strings.Contains(j.Errors[0], "goroutine") {
			t.Errorf("panicking job = %+v; want failed with the panic and its stack", j)
		} else if f := j.Failures[0]; f.Error != "panic: assignment to entry in nil map" || !strings.HasPrefix(f.Stack, "goroutine ") {
			t.Errorf("panicking job's failure = %q, stack %.40q; want the panic's message and its stack apart", f.Error, f.Stack)
		} else {
			failedAt(t, j, 1)
		}
		for _, name := range []string{"fail", "last", "retryat", "discard", "garbled"} {
			failedAt(t, get(name), 1)
		}
		if j := get("someday"); j.State != queue.StateAvailable || !j.RunAfter.Equal(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)) {
			t.Errorf("job retried at year 12000 = %+v; want available, due at the end of year 9999", j)
		}
		if j := get("garbled"); j.State != queue.StateAvailable || len(j.Errors) != 1 || j.Errors[0] != `body: \x00`+"\uFFFD" {
			t.Errorf("job failing with NUL and invalid UTF-8 = %+v; want failed, its error made storable", j)
		}
		for name, want := range map[string]queue.Outcome{"ok": queue.OutcomeCompleted, "fail": queue.OutcomeFailed, "last": queue.OutcomeDead,
			"snooze": queue.OutcomeSnoozed, "discard": queue.OutcomeDead, "panic": queue.OutcomeFailed} {
			if got, _ := outcomes.Load(ids[name]); got != want {
				t.Errorf("%s: JobFinished outcome %v, want %v", name, got, want)
			}
		}
	})
}

// TestWorkerHeartbeatRunsThroughShutdown: a handler still running when
// shutdown begins keeps its lease for as long as the shutdown lets it run,
// so a job that outlasts what was left of its lease completes; a heartbeat
// that stopped with the claims would cancel it as its lease ran out, and
// the attempt would be lost.
func TestWorkerHeartbeatRunsThroughShutdown(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		res, err := q.Push(ctx, task("long"))
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan struct{})
		var outcome atomic.Value
		w := q.Worker(func(ctx context.Context, job *queue.Job[payload.Task]) error {
			close(started)
			select {
			case <-time.After(2500 * time.Millisecond): // more than twice the lease
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}, queue.Lease(time.Second), queue.ShutdownTimeout(10*time.Second), queue.Logger(quiet), queue.WithHooks(queue.Hooks{
			JobFinished: func(_ context.Context, _ queue.JobInfo, o queue.Outcome, _ time.Duration, _ error) { outcome.Store(o) },
		}))
		stop := runWorker(t, w)
		<-started
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if got := outcome.Load(); got != queue.OutcomeCompleted {
			t.Errorf("the job running through the shutdown finished %v, want %v", got, queue.OutcomeCompleted)
		}
		if _, err := q.Get(ctx, res.ID); err == nil {
			t.Errorf("the completed job is still there")
		}
	})
}

// TestWorkerHeartbeatKeepsALongJob: a job that runs three times longer
// than its lease keeps it, so a second worker never gets it.
func TestWorkerHeartbeatKeepsALongJob(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		if _, err := q.Push(ctx, task("long")); err != nil {
			t.Fatal(err)
		}
		var runs atomic.Int64
		handler := func(ctx context.Context, job *queue.Job[payload.Task]) error {
			runs.Add(1)
			select {
			case <-time.After(1500 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		opts := []queue.WorkerOption{queue.Lease(time.Second), queue.PollInterval(50 * time.Millisecond), queue.Logger(quiet)}
		runWorker(t, q.Worker(handler, append(opts, queue.Node("a"))...))
		runWorker(t, q.Worker(handler, append(opts, queue.Node("b"))...))
		eventually(t, 30*time.Second, "the long job completed", func() bool { return e.count(t, "SELECT count(*) FROM task_queue") == 0 })
		if runs.Load() != 1 {
			t.Errorf("the long job ran %d times, want once", runs.Load())
		}
	})
}

// extendCounter is a queue whose ExtendMany calls are recorded: the size
// of each batch the heartbeat sent.
type extendCounter struct {
	leaseQueue
	mu      sync.Mutex
	batches []int
}

func (c *extendCounter) ExtendMany(ctx context.Context, jobs []*queue.Job[payload.Task], d time.Duration) ([]int64, error) {
	c.mu.Lock()
	c.batches = append(c.batches, len(jobs))
	c.mu.Unlock()
	return c.leaseQueue.ExtendMany(ctx, jobs, d)
}

// TestWorkerHeartbeatExtendsInBatches: the heartbeat extends every running
// job of a worker in one statement, and when one of them was claimed again
// behind its back, it cancels that one alone: the others keep their
// leases and complete, each run once.
func TestWorkerHeartbeatExtendsInBatches(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		const n = 12
		pushTasks(t, e.task, n)
		q := &extendCounter{leaseQueue: e.task}
		var runs atomic.Int64
		var ids sync.Map // name → id
		release := make(chan struct{})
		lost := make(chan string, n)
		var extendHook atomic.Int64 // the largest "extend" batch the Batch hook saw
		hooks := queue.Hooks{Batch: func(_, kind string, size int) {
			if kind == "extend" && int64(size) > extendHook.Load() {
				extendHook.Store(int64(size))
			}
		}}
		w := queue.NewWorker[payload.Task](q, func(ctx context.Context, job *queue.Job[payload.Task]) error {
			ids.Store(job.Payload.Name, job.ID)
			runs.Add(1)
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				lost <- job.Payload.Name
				return context.Cause(ctx)
			}
		}, queue.Lease(2*time.Second), queue.Concurrency(n), queue.WithHooks(hooks), queue.Logger(quiet))
		runWorker(t, w)
		eventually(t, 20*time.Second, "every job running", func() bool { return runs.Load() == n })
		stolen, _ := ids.Load("3")
		steal(t, e, stolen.(int64))
		select {
		case name := <-lost:
			if name != "3" {
				t.Errorf("the heartbeat cancelled job %q, want the stolen job 3", name)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the stolen job was not cancelled")
		}
		// Past a further lease: the others were extended, not cancelled.
		time.Sleep(2500 * time.Millisecond)
		close(release)
		eventually(t, 20*time.Second, "the other jobs completed", func() bool {
			return e.count(t, "SELECT count(*) FROM task_queue") == 1
		})
		if len(lost) > 0 || runs.Load() != n {
			t.Errorf("%d more jobs cancelled, %d runs in all; want none and %d", len(lost), runs.Load(), n)
		}
		q.mu.Lock()
		defer q.mu.Unlock()
		if len(q.batches) == 0 || slices.Max(q.batches) != n {
			t.Errorf("heartbeat batches %v; want one of all %d running jobs", q.batches, n)
		}
		if extendHook.Load() != n {
			t.Errorf("the Batch hook's largest extend batch was %d, want %d", extendHook.Load(), n)
		}
	})
}

// TestWorkerLostLeaseCancelsTheJob: when the job is claimed again behind
// the worker's back, the heartbeat notices and cancels the handler, and
// the worker does not complete the new attempt.
func TestWorkerLostLeaseCancelsTheJob(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		res, _ := q.Push(ctx, task("stolen"))
		cancelled := make(chan error, 1)
		started := make(chan struct{})
		w := q.Worker(func(ctx context.Context, job *queue.Job[payload.Task]) error {
			close(started)
			<-ctx.Done()
			cancelled <- context.Cause(ctx)
			return nil // even a nil result must not complete a lost job
		}, queue.Lease(900*time.Millisecond), queue.Logger(quiet))
		runWorker(t, w)
		<-started
		// Another node takes the job over (as a claim after expiry would).
		steal(t, e, res.ID)
		select {
		case cause := <-cancelled:
			if cause == nil || !strings.Contains(cause.Error(), "lease was lost") {
				t.Errorf("handler context cause = %v", cause)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the handler was not cancelled")
		}
		time.Sleep(100 * time.Millisecond) // let a (wrong) completion flush
		if j, err := q.Get(ctx, res.ID); err != nil || j.LockedBy != "thief" || j.State != queue.StateRunning {
			t.Errorf("the thief's attempt was touched: %+v, %v", j, err)
		}
	})
}

// TestWorkerLeaseRunsOutWhileTheDatabaseStalls: when the heartbeat cannot
// extend a lease (here its UPDATE waits on a row lock another session
// holds), the handler is cancelled as its lease runs out locally, before
// another node could claim the job again; a job of the same claim that
// already finished is not touched.
func TestWorkerLeaseRunsOutWhileTheDatabaseStalls(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		stuck, _ := q.Push(ctx, task("stuck"))
		quick, _ := q.Push(ctx, task("quick"))
		cancelled := make(chan error, 1)
		started := make(chan struct{})
		lease := 900 * time.Millisecond
		w := q.Worker(func(ctx context.Context, job *queue.Job[payload.Task]) error {
			if job.ID == quick.ID {
				return nil
			}
			close(started)
			<-ctx.Done()
			cancelled <- context.Cause(ctx)
			return nil
		}, queue.Lease(lease), queue.Logger(quiet))
		runWorker(t, w)
		<-started
		lockRow(t, e, stuck.ID)
		began := time.Now()
		select {
		case cause := <-cancelled:
			if cause == nil || !strings.Contains(cause.Error(), "lease expired") {
				t.Errorf("handler context cause = %v, want the lease's expiry", cause)
			}
			if waited := time.Since(began); waited > lease+2*time.Second {
				t.Errorf("cancelled %v after the handler started, with a lease of %v", waited, lease)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the handler was not cancelled when its lease ran out")
		}
		eventually(t, 10*time.Second, "the quick job completed", func() bool {
			_, err := q.Get(ctx, quick.ID)
			return errors.Is(err, e.noRows)
		})
	})
}

// steal takes task job id over as node "thief" would by claiming it again
// (attempt + 1) for an hour, behind its holder's back.
func steal(t *testing.T, e *engine, id int64) {
	t.Helper()
	e.exec(t, "UPDATE task_queue SET attempt = attempt + 1, locked_by = 'thief', locked_until = ? WHERE id = ?", time.Now().UTC().Add(time.Hour), id)
}

// TestWorkerLeaseRunsOutThenTheHandlerFails: a handler cancelled as its
// lease ran out locally (the heartbeat's UPDATE waited on a row lock),
// that runs on after the database is back and then returns an error, has
// its failure written like any other (fenced by its attempt), so the job
// is retried after its backoff with the error recorded; before, the
// worker wrote nothing and the job stayed held until its lease, which the
// heartbeat had renewed meanwhile, ran out again.
func TestWorkerLeaseRunsOutThenTheHandlerFails(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		stuck, _ := q.Push(ctx, task("stuck"))
		started, cancelled, finish := make(chan struct{}), make(chan struct{}), make(chan struct{})
		lease := 900 * time.Millisecond
		w := q.Worker(func(ctx context.Context, job *queue.Job[payload.Task]) error {
			if job.Attempt > 1 {
				<-ctx.Done() // the retry holds the job until the test ends
				return ctx.Err()
			}
			close(started)
			<-ctx.Done()
			close(cancelled)
			<-finish // ignores the cancellation, as handlers may
			return errors.New("gave up late")
		}, queue.Lease(lease), queue.Logger(quiet))
		runWorker(t, w)
		<-started
		unlock := lockRow(t, e, stuck.ID)
		select {
		case <-cancelled:
		case <-time.After(20 * time.Second):
			t.Fatal("the handler was not cancelled when its lease ran out")
		}
		unlock()
		time.Sleep(lease / 2) // the heartbeat may renew the lease meanwhile
		close(finish)
		eventually(t, 10*time.Second, "the late failure recorded", func() bool {
			j, err := q.Get(ctx, stuck.ID)
			return err == nil && len(j.Errors) == 1 && strings.Contains(j.Errors[0], "gave up late")
		})
	})
}

// lockRow holds a row lock on job id of task_queue in a transaction of its
// own until the test ends or unlock is called, as a stalled database
// would: updates of the row wait.
func lockRow(t *testing.T, e *engine, id int64) (unlock func()) {
	t.Helper()
	tx, err := e.db.SQL.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	lock, args := "SELECT id FROM task_queue WHERE id = ? FOR UPDATE", []any{id}
	switch e.name {
	case dburl.SQLServer:
		lock = "SELECT id FROM task_queue WITH (UPDLOCK, ROWLOCK) WHERE id = ?"
	case dbtest.Citus:
		// Citus locks rows of one shard only: the job's bucket names it
		// (an id carries its bucket, id % spec.MaxBuckets).
		lock, args = "SELECT id FROM task_queue WHERE bucket = ? AND id = ? FOR UPDATE", []any{id % spec.MaxBuckets, id}
	}
	var got int64
	if err := tx.QueryRow(e.placeholders(lock), args...).Scan(&got); err != nil {
		t.Fatal(err)
	}
	return func() { tx.Rollback() }
}

// TestWorkerGracefulShutdown: on shutdown, a quick job finishes and is
// completed, a job that outlasts the grace period is cancelled and
// released, and nothing is left claimed.
func TestWorkerGracefulShutdown(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		quick, _ := q.Push(ctx, task("quick"))
		slow, _ := q.Push(ctx, task("slow"))
		var running sync.WaitGroup
		running.Add(2)
		w := q.Worker(func(ctx context.Context, job *queue.Job[payload.Task]) error {
			running.Done()
			if job.Payload.Name == "quick" {
				time.Sleep(100 * time.Millisecond)
				return nil
			}
			<-ctx.Done()
			return ctx.Err()
		}, queue.ShutdownTimeout(500*time.Millisecond), queue.Logger(quiet))
		stop := runWorker(t, w)
		running.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Get(ctx, quick.ID); err == nil {
			t.Errorf("the quick job was not completed at shutdown")
		}
		j, err := q.Get(ctx, slow.ID)
		if err != nil || j.State != queue.StateAvailable || j.LockedBy != "" || j.MaxAttempts != 4 {
			t.Errorf("the slow job after shutdown = %+v, %v; want released (available, attempt given back)", j, err)
		}
		if n := e.count(t, "SELECT count(*) FROM task_queue WHERE state = 'running'"); n != 0 {
			t.Errorf("%d jobs left claimed after shutdown", n)
		}
	})
}

// TestWorkerReleasesWhatItsNodeLeft: a worker with a stable node id
// releases, on start, the jobs a crashed run of the same node held.
func TestWorkerReleasesWhatItsNodeLeft(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		q.PushMany(ctx, []payload.Task{task("a"), task("b")})
		if got, _ := q.Claim(ctx, "pod-7", 10); len(got) != 2 { // the run that crashed
			t.Fatalf("claimed %d", len(got))
		}
		var handled atomic.Int64
		runWorker(t, q.Worker(func(context.Context, *queue.Job[payload.Task]) error {
			handled.Add(1)
			return nil
		}, queue.Node("pod-7"), queue.PollInterval(50*time.Millisecond), queue.Logger(quiet)))
		eventually(t, 30*time.Second, "the crashed run's jobs worked", func() bool { return handled.Load() == 2 })
	})
}

// TestWorkerWakesOnLocalPush: with polling effectively off and no
// listener, a push made through this process's accessor wakes its
// worker at once (MySQL's only wake-up besides polling).
func TestWorkerWakesOnLocalPush(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		handled := make(chan string, 10)
		runWorker(t, e.nowait.Worker(func(_ context.Context, job *queue.Job[payload.Task]) error {
			handled <- job.Payload.Name
			return nil
		}, queue.PollInterval(time.Hour), queue.Logger(quiet)))
		time.Sleep(200 * time.Millisecond) // the worker's first claim, empty, is done
		for _, name := range []string{"one", "two"} {
			if _, err := e.nowait.Push(ctx, task(name)); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-handled:
				if got != name {
					t.Fatalf("handled %q, want %q", got, name)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s was not handled: the push did not wake the worker (polling is hourly)", name)
			}
		}
	})
}

// TestPauseAndResumeAcrossWorkers: a pause stops both workers claiming; a
// resume lets them go on.
func TestPauseAndResumeAcrossWorkers(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		if err := q.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		var handled atomic.Int64
		for _, node := range []string{"one", "two"} {
			runWorker(t, q.Worker(func(context.Context, *queue.Job[payload.Task]) error {
				handled.Add(1)
				return nil
			}, queue.Node(node), queue.PollInterval(50*time.Millisecond), queue.Logger(quiet)))
		}
		q.PushMany(ctx, []payload.Task{task("a"), task("b"), task("c")})
		time.Sleep(1500 * time.Millisecond) // several poll periods
		if n := handled.Load(); n != 0 {
			t.Fatalf("%d jobs handled while paused", n)
		}
		if err := q.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the jobs after resume", func() bool { return handled.Load() == 3 })
	})
}

// TestWorkerBackoffCountsFailures: the retry delay grows with a job's
// failures, not with its attempts: a job that snoozed twice and then fails
// for the first time waits the backoff's minimum (1s here), where its
// attempt number (3) would make it 4s.
func TestWorkerBackoffCountsFailures(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		res, err := q.Push(ctx, task("snoozy"))
		if err != nil {
			t.Fatal(err)
		}
		var failed atomic.Bool
		w := q.Worker(func(ctx context.Context, job *queue.Job[payload.Task]) error {
			if job.Attempt < 3 {
				return queue.SnoozeFor(time.Millisecond)
			}
			defer failed.Store(true)
			return errors.New("first failure")
		}, queue.PollInterval(20*time.Millisecond), queue.Logger(quiet))
		stop := runWorker(t, w)
		eventually(t, 30*time.Second, "the third attempt failed", failed.Load)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		j, err := q.Get(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.Attempt != 3 || len(j.Errors) != 1 || j.AttemptedAt == nil {
			t.Fatalf("job = %+v; want attempt 3 with one failure", j)
		}
		if wait := j.RunAfter.Sub(*j.AttemptedAt); wait < 900*time.Millisecond || wait > 2500*time.Millisecond {
			t.Errorf("retried %v after its attempt; want about 1s, the delay after a first failure", wait)
		}
	})
}
