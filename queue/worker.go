package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuegen/queuegen/queue/internal/wake"
)

// LeaseQueue is what a Worker needs of a queue: the methods every
// generated lease-mode accessor has.
type LeaseQueue[P any] interface {
	// QueueName is the queue's name in the spec, for logs and hooks.
	QueueName() string
	// LeaseDuration is the spec's lease, unless the Lease option overrides it.
	LeaseDuration() time.Duration
	// NotifyChannel is the channel pushes notify on, or "" without notify.
	NotifyChannel() string
	// RetryDelay is the backoff after a job's nth failure.
	RetryDelay(failures int32) time.Duration
	// Claim leases up to max due jobs to node; jobs returned with an
	// error are leased all the same.
	Claim(ctx context.Context, node string, max int, opts ...ClaimOption) ([]*Job[P], error)
	// CompleteMany completes the jobs still held, fenced by attempt, and
	// returns how many.
	CompleteMany(ctx context.Context, jobs []*Job[P]) (int64, error)
	// FailManyAfter records failed attempts, each retried after its delay
	// (or dead, its attempts used), and returns each job's new state.
	FailManyAfter(ctx context.Context, jobs []*Job[P], causes []error, delays []time.Duration) (map[int64]State, error)
	// FailManyAt is FailManyAfter with a time for each retry.
	FailManyAt(ctx context.Context, jobs []*Job[P], causes []error, ats []time.Time) (map[int64]State, error)
	// SnoozeFor puts a held job back for d, its attempt given back.
	SnoozeFor(ctx context.Context, job *Job[P], d time.Duration) error
	// Discard makes a held job dead now, keeping cause.
	Discard(ctx context.Context, job *Job[P], cause error) error
	// ExtendMany moves the leases of the jobs still held to d from now
	// and returns their ids.
	ExtendMany(ctx context.Context, jobs []*Job[P], d time.Duration) ([]int64, error)
	// Release gives a held job back, claimable now, its attempt given back.
	Release(ctx context.Context, job *Job[P]) error
	// ReleaseNode gives back what node holds (dead if on its last attempt).
	ReleaseNode(ctx context.Context, node string) (int64, error)
	// Paused reads the queue's pause flag.
	Paused(ctx context.Context) (bool, error)
	// Depth counts the jobs due now.
	Depth(ctx context.Context) (int64, error)
}

// Worker claims jobs of one queue and runs a handler on each, at most
// Concurrency at a time. It claims in batches sized to its free capacity,
// completes and fails jobs in batches (one statement for many, flushed
// within FlushInterval), keeps each running job's lease alive with a
// heartbeat, and on shutdown lets running jobs finish, releases those that
// cannot, and flushes what is pending. Create one with a generated
// accessor's Worker method.
type Worker[P any] struct {
	q       LeaseQueue[P]
	handler Handler[P]
	cfg     workerConfig
	lease   time.Duration
	name    string
	bad     error // the first bad option: Run returns it, running nothing

	room    claimRoom     // the jobs claimed and not yet finished
	wake    chan struct{} // capacity 1: coalesces wake-ups
	limited limitedQueue  // q, when it has limits; else nil
	handles sync.WaitGroup

	mu      sync.Mutex
	running map[int64]*runningJob[P]

	results *results[P]                  // finished, not yet written
	pool    *handlerPool[*runningJob[P]] // runs the handlers; one per Run
	pause   *pauseGate
}

type runningJob[P any] struct {
	job    *Job[P]
	ctx    context.Context // the handler's: cancelled with a cause
	cancel context.CancelCauseFunc
	// leases cancels the job when its lease runs out: deadline, in the
	// group's clock, moved on by each heartbeat; finished once the handler
	// has returned.
	leases   *leaseGroup[P]
	deadline atomic.Int64
	finished atomic.Bool
}

var (
	errLeaseLost    = errors.New("queue: the job's lease was lost (it was claimed again or finished elsewhere)")
	errLeaseExpired = errors.New("queue: the job's lease expired before the heartbeat could extend it")
	errShutdown     = errors.New("queue: the worker is shutting down")
)

// nodeChecker is a queue that says whether its lease column holds a node
// id (generated accessors of engines with a limit).
type nodeChecker interface {
	CheckNode(node string) error
}

// resultsWithin is a queue that says how soon a worker writes its results
// unless FlushInterval says otherwise: the generated accessors of queues
// with concurrency limits (per_key or global), where a result not yet
// written holds its slot. PostgreSQL's write each at once (0: a write per
// result costs less than the slot's idle time), MySQL's within 1 ms (at
// once measured slower on MariaDB; BENCHMARKS.md). SQL Server's, never
// measured, keep the default.
type resultsWithin interface {
	ResultsWithin() time.Duration
}

// NewWorker returns a worker for q. Generated accessors call it from their
// Worker method, which fixes P to the queue's payload type.
func NewWorker[P any](q LeaseQueue[P], handler Handler[P], opts ...WorkerOption) *Worker[P] {
	cfg, bad := newWorkerConfig(opts, defaultLeaseConcurrency)
	if c, ok := q.(nodeChecker); ok && bad == nil {
		// A node id the lease column cannot hold is refused at Run, not
		// logged on every claim.
		bad = c.CheckNode(cfg.node)
	}
	lease := cfg.lease
	if lease <= 0 {
		lease = q.LeaseDuration()
	}
	limited, _ := q.(limitedQueue)
	if r, ok := q.(resultsWithin); ok && !cfg.flushSet {
		// A result not yet written is a slot of the limits held: the
		// accessor says how soon its engine writes them best.
		cfg.flushInterval = r.ResultsWithin()
	}
	return &Worker[P]{
		q: q, handler: handler, cfg: cfg, lease: lease, name: q.QueueName(), limited: limited, bad: bad,
		room:    newClaimRoom(cfg.claimers * cfg.maxClaim),
		wake:    make(chan struct{}, 1),
		running: map[int64]*runningJob[P]{},
		results: newResults[P](),
		pause:   &pauseGate{read: q.Paused, interval: cfg.pauseInterval},
	}
}

// Node is the node id this worker records in its leases.
func (w *Worker[P]) Node() string { return w.cfg.node }

// ShutdownError says what a shutdown that ran out of time left behind.
type ShutdownError struct {
	// Queue is the worker's queue.
	Queue string
	// Running is how many handlers ignored their cancelled context: their
	// jobs stay leased until the leases expire, then run again (in
	// transaction mode, their transactions stay open until the handlers
	// return or the process exits, then roll back).
	Running int
	// Unwritten is how many finished jobs could not be recorded before
	// the timeout (the database refused, with Err): they run again when
	// their leases expire.
	Unwritten int
	// Err is the last error writing them met.
	Err error
}

// Error says what the shutdown left and what becomes of it.
func (e *ShutdownError) Error() string {
	var parts []string
	if e.Running > 0 {
		parts = append(parts, fmt.Sprintf("%d handlers ignored cancellation (their jobs come back when their leases expire, or their transactions end)", e.Running))
	}
	if e.Unwritten > 0 {
		parts = append(parts, fmt.Sprintf("%d finished jobs could not be recorded (%v); they run again when their leases expire", e.Unwritten, e.Err))
	}
	return fmt.Sprintf("queue %s: shutdown timed out: %s", e.Queue, strings.Join(parts, "; "))
}

// Run works the queue until ctx is cancelled, then shuts down gracefully,
// within ShutdownTimeout: it stops claiming, gives running handlers most
// of the timeout to finish, cancels the rest and releases their jobs, and
// writes every pending result. It returns nil after a clean shutdown, and a
// *ShutdownError saying what it left when the timeout ran out. An option
// given a bad value makes it return an *OptionError (wrapping ErrOption) at
// once, having run nothing.
func (w *Worker[P]) Run(ctx context.Context) error {
	if w.bad != nil {
		return fmt.Errorf("queue %s: %w", w.name, w.bad)
	}
	log := w.cfg.logger.With("queue", w.name, "node", w.cfg.node)
	if w.cfg.stableNode && !w.releaseNode(ctx, log) {
		return nil // shut down before it started: nothing was claimed
	}
	// The node's row outlives ctx, as the heartbeat of leases does: the
	// node is alive until its shutdown ends.
	node := startNodeBeat(ctx, w.q, w.name, w.cfg, w.runningCount, log)

	// Handlers and the completer outlive ctx: they get their own contexts,
	// ended by the shutdown sequence below. jobsCtx only carries ctx's
	// values: each job's context is cancelled on its own (cancelRunning,
	// a lost lease), not through a parent.
	jobsCtx := context.WithoutCancel(ctx)
	flushCtx, cancelFlush := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelFlush()
	stopCompleter := make(chan struct{})
	type outcome struct {
		unwritten int
		err       error
	}
	completerDone := make(chan outcome, 1)
	go func() {
		n, err := w.completer(flushCtx, stopCompleter)
		completerDone <- outcome{n, err}
	}()

	bg, cancelBG := context.WithCancel(ctx)
	var bgWG sync.WaitGroup
	// The heartbeat outlives ctx too: the leases of handlers finishing
	// during the shutdown must not run out under them.
	beat, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBeat()
	beating := make(chan struct{})
	go func() { defer close(beating); w.heartbeat(beat) }()
	if w.cfg.hooks.Depth != nil {
		bgWG.Go(func() { feedDepth(bg, w.q, w.name, w.cfg.hooks.Depth, w.cfg.statsInterval) })
	}
	if l := w.cfg.listener; l != nil {
		if ch := w.q.NotifyChannel(); ch != "" {
			unsubscribe := l.Subscribe(ch, w.wake)
			defer unsubscribe()
		} else {
			log.Warn("a Listener was given but the queue does not notify on push (set notify: true in the spec); polling only")
		}
	}
	defer wake.Subscribe(w.name, w.wake)() // pushes made in this process

	w.pool = newHandlerPool(w.run, w.cfg.concurrency)
	var claimers sync.WaitGroup
	for range w.cfg.claimers {
		claimers.Go(func() { w.claimLoop(ctx, jobsCtx, log) })
	}
	claimers.Wait()
	w.pool.close() // nothing more is claimed: its goroutines end as the jobs do
	cancelBG()
	bgWG.Wait()

	// Shutdown, within ShutdownTimeout: handlers get three quarters of it,
	// then are cancelled (their jobs are released); what remains is for
	// writing the results.
	deadline := time.Now().Add(w.cfg.shutdownTimeout)
	finished := make(chan struct{})
	go func() { w.handles.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(time.Until(deadline) * 3 / 4):
		log.Warn("shutdown: cancelling running jobs", "jobs", w.runningCount())
		w.cancelRunning(errShutdown)
		select {
		case <-finished:
		case <-time.After(time.Until(deadline) / 2):
		}
	}
	stopBeat()
	<-beating
	running := w.runningCount()
	close(stopCompleter)
	var out outcome
	select {
	case out = <-completerDone:
	case <-time.After(time.Until(deadline)):
		cancelFlush()
		out = <-completerDone
	}
	if running > 0 || out.unwritten > 0 {
		node.end(ctx, false)
		err := &ShutdownError{Queue: w.name, Running: running, Unwritten: out.unwritten, Err: out.err}
		log.Error("shutdown left work behind", "err", err)
		return err
	}
	node.end(ctx, true)
	return nil
}

// releaseNode makes what a previous run of this node left claimed
// claimable again, retrying with backoff while the database cannot be
// reached. It reports false when ctx ended first.
func (w *Worker[P]) releaseNode(ctx context.Context, log *slog.Logger) bool {
	backoff := 100 * time.Millisecond
	for {
		n, err := w.q.ReleaseNode(ctx, w.cfg.node)
		if err == nil {
			if n > 0 {
				log.Info("released jobs a previous run of this node left claimed", "jobs", n)
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		log.Warn("releasing what a previous run of this node left claimed failed; retrying", "err", err, "in", backoff)
		sleep(ctx, backoff)
		backoff = min(2*backoff, w.cfg.pollInterval)
	}
}

// claimLoop claims while ctx lasts.
func (w *Worker[P]) claimLoop(ctx, jobsCtx context.Context, log *slog.Logger) {
	var wait time.Duration
	failures := 0
	for ctx.Err() == nil {
		if w.pause.hold(ctx) {
			continue
		}
		// While finished jobs cannot be recorded, claim no more: their
		// results would only pile up.
		if w.results.backlog() >= w.backlogLimit() {
			sleep(ctx, w.cfg.flushInterval+10*time.Millisecond)
			continue
		}
		n := w.waitRoom(ctx)
		if n == 0 {
			return
		}
		// The claim must not be cut off by ctx: a claim that commits but
		// whose answer is lost would leave jobs leased to nobody.
		claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		asked := time.Now() // the leases run from no later than this
		jobs, err := w.q.Claim(claimCtx, w.cfg.node, n, LeaseFor(w.lease))
		cancel()
		w.room.release(n - len(jobs))
		if err == nil && w.limited == nil {
			w.room.claimed(time.Since(asked))
		}
		if err != nil {
			failures++
			log.Warn("claim failed", "err", err, "failures", failures, "jobs", len(jobs))
			if len(jobs) == 0 {
				sleep(ctx, min(w.cfg.pollInterval, time.Duration(failures)*100*time.Millisecond))
				continue
			}
			// The jobs returned with the error are claimed: work them.
		} else {
			failures = 0
		}
		if h := w.cfg.hooks.Batch; h != nil && len(jobs) > 0 {
			h(w.name, "claim", len(jobs))
		}
		w.start(jobsCtx, jobs, asked)
		switch {
		case len(jobs) == n:
			continue // a full batch: there may be more at once
		case w.limited != nil && heldBack(ctx, w.limited):
			wait = min(w.cfg.limitPoll, w.cfg.pollInterval)
		case len(jobs) > 0:
			wait = w.cfg.cooldown // jobs are arriving: look again soon
		default:
			wait = w.cfg.pollInterval
		}
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-time.After(wait):
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// cancelRunning cancels each started job's context with cause, one by
// one: they have no parent to cancel them all (see start). Run calls it
// once the claim loops have ended, so no job starts after it.
func (w *Worker[P]) cancelRunning(cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.running {
		r.cancel(cause)
	}
}

func (w *Worker[P]) runningCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.running)
}

// start hands claimed jobs to the handler pool, each holding one slot;
// their leases were taken no earlier than asked.
func (w *Worker[P]) start(jobsCtx context.Context, jobs []*Job[P], asked time.Time) {
	if len(jobs) == 0 {
		return
	}
	// One allocation for the batch's runningJobs, and job contexts under
	// jobsCtx, which is never cancelled: a child of a parent that can be
	// costs a map entry under the parent's lock, taken and dropped for
	// every job. cancelRunning cancels them one by one.
	block := make([]runningJob[P], len(jobs))
	rs := make([]*runningJob[P], len(jobs))
	for i, job := range jobs {
		r := &block[i]
		r.job = job
		r.ctx, r.cancel = context.WithCancelCause(jobsCtx)
		rs[i] = r
	}
	watchLeases(rs, asked, w.lease)
	w.mu.Lock()
	for _, r := range rs {
		w.running[r.job.ID] = r
	}
	w.mu.Unlock()
	w.handles.Add(len(rs))
	w.pool.add(rs...)
}

// run runs the handler on one started job, then hands its result over and
// frees its slot.
func (w *Worker[P]) run(r *runningJob[P]) {
	defer w.handles.Done()
	var ran time.Duration
	defer func() { w.room.finish(ran) }() // the job's room, freed last
	ctx, job := r.ctx, r.job
	if cause := context.Cause(ctx); cause != nil {
		// Cancelled while it waited ahead of the handlers (its lease lost,
		// or the shutdown): no handler runs it; it is released, or left
		// to whoever holds it now.
		r.leases.done(r)
		w.mu.Lock()
		delete(w.running, job.ID)
		w.mu.Unlock()
		r.cancel(nil)
		w.settle(job, cause, cause)
		return
	}
	if w.cfg.jobTimeout > 0 { // no wrapper per job without one
		// From the handler's start: a job held ahead waits for a handler
		// without using its time.
		var stop context.CancelFunc
		ctx, stop = withJobTimeout(ctx, w.cfg.jobTimeout)
		defer stop()
	}
	info := JobInfo{Queue: w.name, ID: job.ID, Attempt: job.Attempt, MaxAttempts: job.MaxAttempts}
	if h := w.cfg.hooks.JobStarted; h != nil {
		ctx = h(ctx, info)
	}
	began := time.Now()
	err := timedOut(ctx, w.call(ctx, job))
	ran = time.Since(began)
	r.leases.done(r)
	w.mu.Lock()
	delete(w.running, job.ID)
	w.mu.Unlock()
	cause := context.Cause(ctx)
	r.cancel(nil)
	outcome := w.settle(job, err, cause)
	if h := w.cfg.hooks.JobFinished; h != nil {
		h(ctx, info, outcome, time.Since(began), err)
	}
}

// call runs the handler, turning a panic into an error with the stack.
func (w *Worker[P]) call(ctx context.Context, job *Job[P]) error {
	if mutant("skip-handler") {
		return nil
	}
	if mutant("double-run") {
		recovered(func() error { return w.handler(ctx, job) })
	}
	err := recovered(func() error { return w.handler(ctx, job) })
	if mutant("error-completes") {
		return nil
	}
	return err
}

// settle decides what the handler's result does to the job; it hands the
// result to the completer and never waits for the database.
func (w *Worker[P]) settle(job *Job[P], err, cause error) Outcome {
	if err == nil { // the hot path: no logger
		w.finish(result[P]{job: job, kind: resultComplete})
		return OutcomeCompleted
	}
	log := w.cfg.logger.With("queue", w.name, "job", job.ID, "attempt", job.Attempt)
	if errors.Is(cause, errLeaseExpired) {
		// The lease ran out by this worker's clock before the heartbeat
		// could extend it, and the handler returned an error after its
		// cancellation. The heartbeat may have extended the lease since
		// (the database answered again while the handler ran on): the
		// failure is written as any other, fenced, so that the job is not
		// held for another lease with nothing running it. Where another
		// claim took it meanwhile, the fence refuses the write.
		err = fmt.Errorf("%w (%v)", err, cause)
	}
	snooze, retryAt, discard := classify(err)
	switch {
	case errors.Is(cause, errLeaseLost):
		// Another claim owns the job now; fencing would refuse anything
		// we did.
		log.Warn("job abandoned: lease lost", "cause", cause, "err", err)
		return OutcomeLost
	case errors.Is(cause, errShutdown):
		w.finish(result[P]{job: job, kind: resultRelease})
		return OutcomeReleased
	case snooze != nil:
		w.finish(result[P]{job: job, kind: resultSnooze, delay: snooze.d})
		return OutcomeSnoozed
	case discard != nil:
		w.finish(result[P]{job: job, kind: resultDiscard, cause: discard.err})
		log.Error("job discarded", "err", err)
		return OutcomeDead
	}
	delay, at, err := retryPlan(w.q, job, err, retryAt)
	w.finish(result[P]{job: job, kind: resultFail, cause: err, delay: delay, at: at})
	if job.Attempt >= job.MaxAttempts {
		log.Error("job failed its last attempt: dead", "err", err)
		return OutcomeDead
	}
	log.Warn("job failed; will retry", "err", err, "in", delay)
	return OutcomeFailed
}

// backlogLimit is how many unwritten results stop the claim loop.
func (w *Worker[P]) backlogLimit() int {
	return 2 * max(w.cfg.concurrency+w.cfg.claimers*w.cfg.maxClaim, w.cfg.flushSize)
}

// heartbeat extends the leases of running jobs every third of a lease.
func (w *Worker[P]) heartbeat(ctx context.Context) {
	t := time.NewTicker(w.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		running := make([]*runningJob[P], 0, len(w.running))
		for _, r := range w.running {
			running = append(running, r)
		}
		w.mu.Unlock()
		// In id order, as the completer writes: two statements that lock
		// the same rows in one order cannot deadlock on them.
		slices.SortFunc(running, func(a, b *runningJob[P]) int { return cmp.Compare(a.job.ID, b.job.ID) })
		for len(running) > 0 && ctx.Err() == nil {
			n := min(len(running), heartbeatBatch)
			w.extend(ctx, running[:n])
			running = running[n:]
		}
	}
}

// heartbeatBatch is how many running jobs one heartbeat statement extends.
const heartbeatBatch = 500

// extend renews the leases of a batch of running jobs in one statement,
// and cancels the jobs whose leases were lost (claimed again after they
// expired, or taken by an operator) among those still running.
func (w *Worker[P]) extend(ctx context.Context, batch []*runningJob[P]) {
	jobs := make([]*Job[P], len(batch))
	for i, r := range batch {
		jobs[i] = r.job // ExtendMany only reads them
	}
	sent := time.Now() // the new leases run from no earlier than this
	// Within a lease every job of the batch has run out locally: waiting
	// longer for a stalled statement would only hold up the next batches.
	stmtCtx, cancel := context.WithTimeout(ctx, w.lease)
	ids, err := w.q.ExtendMany(stmtCtx, jobs, w.lease)
	cancel()
	if err != nil {
		// The database is unreachable: the jobs run on until their leases
		// run out locally, then stop.
		w.cfg.logger.Warn("lease heartbeat failed", "queue", w.name, "jobs", len(batch), "err", err)
		return
	}
	if h := w.cfg.hooks.Batch; h != nil {
		h(w.name, "extend", len(batch))
	}
	extended := make(map[int64]bool, len(ids))
	for _, id := range ids {
		extended[id] = true
	}
	for _, r := range batch {
		switch {
		case extended[r.job.ID]:
			r.leases.extend(r, sent, w.lease)
		case r.finished.Load():
			// Its result may already be written: the row is gone or
			// finished, and there is nothing to cancel.
		default:
			r.cancel(errLeaseLost)
		}
	}
}

// feedDepth calls depth with q's number of due jobs every interval until
// ctx ends; a count that fails is skipped.
func feedDepth(ctx context.Context, q interface {
	Depth(context.Context) (int64, error)
}, name string, depth func(string, int64), interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := q.Depth(ctx); err == nil {
			depth(name, n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
