package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuegen/queuegen/queue/internal/wake"
)

// TxQueue is what a TxWorker needs of a queue whose transactions are of
// type Tx: the methods every generated transaction-mode accessor has.
type TxQueue[P, Tx any] interface {
	// QueueName is the queue's name in the spec, for logs and hooks.
	QueueName() string
	// NotifyChannel is the channel pushes notify on, or "" without notify.
	NotifyChannel() string
	// RetryDelay is the backoff after a job's nth failure.
	RetryDelay(failures int32) time.Duration
	// Claim locks up to max due jobs in tx, which holds them until it ends.
	Claim(ctx context.Context, tx Tx, max int, opts ...ClaimOption) ([]*Job[P], error)
	// Complete completes a job in tx.
	Complete(ctx context.Context, tx Tx, job *Job[P]) error
	// FailManyAfter records failed attempts in tx, each retried after its
	// delay (or dead, its attempts used), and returns each job's new state.
	FailManyAfter(ctx context.Context, tx Tx, jobs []*Job[P], causes []error, delays []time.Duration) (map[int64]State, error)
	// FailManyAt is FailManyAfter with a time for each retry.
	FailManyAt(ctx context.Context, tx Tx, jobs []*Job[P], causes []error, ats []time.Time) (map[int64]State, error)
	// SnoozeFor puts a job back for d in tx, its attempt given back.
	SnoozeFor(ctx context.Context, tx Tx, job *Job[P], d time.Duration) error
	// Discard makes a job dead now in tx, keeping cause.
	Discard(ctx context.Context, tx Tx, job *Job[P], cause error) error
	// Paused reads the queue's pause flag.
	Paused(ctx context.Context) (bool, error)
	// Depth counts the jobs due now (and, on some engines, those being
	// worked: see the README).
	Depth(ctx context.Context) (int64, error)
}

// TxHandler works one job of a transaction-mode queue inside tx, the
// transaction that claimed it: what the handler writes with tx commits
// together with the job's completion, or not at all. Its result means what
// a Handler's does; on an error (or panic) the handler's writes are rolled
// back and the failure is recorded.
type TxHandler[P, Tx any] func(ctx context.Context, tx Tx, job *Job[P]) error

// TxWorker works a transaction-mode queue: Concurrency loops, each
// claiming one job in a transaction of its own, running the handler in it,
// and committing the job's outcome with the handler's writes. A crash or a
// shutdown rolls back: the job simply returns. Create one with a generated
// accessor's Worker method.
type TxWorker[P, Tx any] struct {
	driver  TxDriver[Tx]
	q       TxQueue[P, Tx]
	handler TxHandler[P, Tx]
	cfg     workerConfig
	name    string
	wake    chan struct{}
	refused error        // a bad option, or the TxIsolation option refused by the driver
	pause   *pauseGate   // shared by the Concurrency loops
	running atomic.Int32 // handlers running
}

// NewTxWorker returns a worker for q whose transactions driver begins.
// Generated accessors call it from their Worker method. When driver
// refuses the TxIsolation option (IsolationChecker), Run returns that
// error before any statement; so it does for an option given a bad value
// (an *OptionError).
func NewTxWorker[P, Tx any](driver TxDriver[Tx], q TxQueue[P, Tx], handler TxHandler[P, Tx], opts ...WorkerOption) *TxWorker[P, Tx] {
	cfg, bad := newWorkerConfig(opts, defaultTxConcurrency)
	w := &TxWorker[P, Tx]{driver: driver, q: q, handler: handler, cfg: cfg, name: q.QueueName(), wake: make(chan struct{}, 1),
		pause: &pauseGate{read: q.Paused, interval: cfg.pauseInterval}, refused: bad}
	if c, ok := driver.(IsolationChecker); ok && bad == nil {
		w.refused = c.CheckIsolation(cfg.isolation)
	}
	return w
}

// Run works the queue until ctx is cancelled, then lets running handlers
// finish for three quarters of ShutdownTimeout before cancelling them
// (their transactions roll back and their jobs return). It returns nil
// once every handler has returned, or a *ShutdownError at the timeout if
// some ignored their cancellation. A TxIsolation level the engine's claim
// cannot run at is refused at once: Run returns an error wrapping
// ErrIsolation, having run nothing; so is an option given a bad value, with
// an *OptionError wrapping ErrOption.
func (w *TxWorker[P, Tx]) Run(ctx context.Context) error {
	if w.refused != nil {
		return fmt.Errorf("queue %s: %w", w.name, w.refused)
	}
	if l := w.cfg.listener; l != nil && w.q.NotifyChannel() != "" {
		defer l.Subscribe(w.q.NotifyChannel(), w.wake)()
	}
	defer wake.Subscribe(w.name, w.wake)() // pushes made in this process
	node := startNodeBeat(ctx, w.q, w.name, w.cfg, func() int { return int(w.running.Load()) }, w.cfg.logger.With("queue", w.name, "node", w.cfg.node))
	jobsCtx, cancelJobs := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelJobs(nil)
	var wg sync.WaitGroup
	for range w.cfg.concurrency {
		wg.Go(func() { w.loop(ctx, jobsCtx) })
	}
	if h := w.cfg.hooks.Depth; h != nil {
		wg.Go(func() { feedDepth(ctx, w.q, w.name, h, w.cfg.statsInterval) })
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	<-ctx.Done()
	deadline := time.Now().Add(w.cfg.shutdownTimeout)
	select {
	case <-finished:
		node.end(ctx, true)
		return nil
	case <-time.After(time.Until(deadline) * 3 / 4):
	}
	cancelJobs(errShutdown)
	select {
	case <-finished:
		node.end(ctx, true)
		return nil
	case <-time.After(time.Until(deadline)):
		running := int(w.running.Load())
		if running == 0 {
			// The last handler returned as the time ran out: nothing is
			// left behind (a ShutdownError would report nothing).
			node.end(ctx, true)
			return nil
		}
		node.end(ctx, false)
		err := &ShutdownError{Queue: w.name, Running: running}
		w.cfg.logger.Error("shutdown left work behind", "queue", w.name, "err", err)
		return err
	}
}

func (w *TxWorker[P, Tx]) loop(ctx, jobsCtx context.Context) {
	log := w.cfg.logger.With("queue", w.name)
	failures := 0
	for ctx.Err() == nil {
		if w.pause.hold(ctx) {
			continue
		}
		worked, err := w.one(jobsCtx)
		switch {
		case err != nil && ctx.Err() == nil:
			failures++
			log.Warn("transaction-mode claim failed", "err", err, "failures", failures)
			sleep(ctx, min(w.cfg.pollInterval, time.Duration(failures)*100*time.Millisecond))
		case worked:
			failures = 0
			select { // more may be due: pass the wake-up on to an idle peer
			case w.wake <- struct{}{}:
			default:
			}
		default:
			failures = 0
			select {
			case <-ctx.Done():
			case <-w.wake:
			case <-time.After(w.cfg.pollInterval):
			}
		}
	}
}

// one claims and works one job in one transaction; it reports whether
// there was a job.
func (w *TxWorker[P, Tx]) one(ctx context.Context) (bool, error) {
	tx, err := w.driver.Begin(ctx, w.cfg.isolation)
	if err != nil {
		return false, err
	}
	defer w.driver.Rollback(context.WithoutCancel(ctx), tx)
	jobs, err := w.q.Claim(ctx, tx, 1)
	if err != nil || len(jobs) == 0 {
		return false, err
	}
	job := jobs[0]
	w.running.Add(1)
	defer w.running.Add(-1)
	if h := w.cfg.hooks.Batch; h != nil {
		h(w.name, "claim", 1)
	}
	info := JobInfo{Queue: w.name, ID: job.ID, Attempt: job.Attempt, MaxAttempts: job.MaxAttempts}
	// Only the handler runs out of time: recording its failure and
	// committing use ctx.
	hctx, stop := withJobTimeout(ctx, w.cfg.jobTimeout)
	defer stop()
	if h := w.cfg.hooks.JobStarted; h != nil {
		hctx = h(hctx, info)
	}
	began := time.Now()
	// The handler works in a savepoint: on failure its writes are undone
	// while the claim (the row lock, the attempt count) stays, and the
	// failure is recorded in the same transaction.
	sp, release, rollback, err := w.driver.Savepoint(ctx, tx)
	if err != nil {
		return true, err
	}
	herr := timedOut(hctx, recovered(func() error { return w.handler(hctx, sp, job) }))
	var outcome Outcome
	if herr == nil {
		if err := release(ctx); err != nil {
			return true, err
		}
		outcome = OutcomeCompleted
		err = w.q.Complete(ctx, tx, job)
	} else {
		if err := rollback(ctx); err != nil {
			return true, err
		}
		if errors.Is(context.Cause(ctx), errShutdown) {
			outcome = OutcomeReleased // the deferred rollback returns the job
			w.finished(hctx, info, outcome, began, herr)
			return true, nil
		}
		if w.driver.Retryable(herr) {
			// A serialization failure or deadlock is the transaction's, not
			// the job's: roll everything back (the deferred rollback) and
			// let the job be claimed again, attempt untouched.
			w.finished(hctx, info, OutcomeRolledBack, began, herr)
			return true, nil
		}
		outcome, err = w.fail(ctx, tx, job, herr)
	}
	if err == nil {
		err = w.driver.Commit(ctx, tx)
	}
	if err != nil {
		return true, err // rolled back: the job returns as it was
	}
	if h := w.cfg.hooks.Batch; h != nil {
		kind := "fail"
		if outcome == OutcomeCompleted {
			kind = "complete"
		}
		h(w.name, kind, 1)
	}
	w.finished(hctx, info, outcome, began, herr)
	return true, nil
}

func (w *TxWorker[P, Tx]) finished(ctx context.Context, info JobInfo, o Outcome, began time.Time, err error) {
	if h := w.cfg.hooks.JobFinished; h != nil {
		h(ctx, info, o, time.Since(began), err)
	}
}

// fail records a handler's error in tx, as Worker does.
func (w *TxWorker[P, Tx]) fail(ctx context.Context, tx Tx, job *Job[P], err error) (Outcome, error) {
	snooze, retryAt, discard := classify(err)
	switch {
	case snooze != nil:
		return OutcomeSnoozed, w.q.SnoozeFor(ctx, tx, job, snooze.d)
	case discard != nil:
		return OutcomeDead, w.q.Discard(ctx, tx, job, discard.err)
	}
	delay, at, err := retryPlan(w.q, job, err, retryAt)
	var states map[int64]State
	var ferr error
	if at.IsZero() {
		states, ferr = w.q.FailManyAfter(ctx, tx, []*Job[P]{job}, []error{err}, []time.Duration{delay})
	} else {
		states, ferr = w.q.FailManyAt(ctx, tx, []*Job[P]{job}, []error{err}, []time.Time{at})
	}
	if ferr != nil {
		return "", ferr
	}
	if states[job.ID] == StateDead {
		w.cfg.logger.Error("job failed its last attempt: dead", "queue", w.name, "job", job.ID, "err", err)
		return OutcomeDead, nil
	}
	w.cfg.logger.Warn("job failed; will retry", "queue", w.name, "job", job.ID, "err", err, "in", delay, "at", at)
	return OutcomeFailed, nil
}
