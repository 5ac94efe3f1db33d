package queue

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// resultKind is what a handler's result does to its job.
type resultKind int

const (
	resultComplete resultKind = iota
	resultFail                // retry after delay, or at
	resultSnooze              // put back for delay, attempt given back
	resultDiscard             // dead now
	resultRelease             // given back unworked (shutdown)
)

// result is a handler's result waiting to be written.
type result[P any] struct {
	job   *Job[P]
	kind  resultKind
	cause error
	delay time.Duration
	at    time.Time // resultFail: retry at this time rather than after delay
}

// results holds what handlers finished and the database has not yet
// recorded. Handing a result over never blocks, so a handler's slot is
// free as soon as it returns, even while the database refuses writes; the
// claim loop instead stops claiming while the backlog is large.
type results[P any] struct {
	mu      sync.Mutex
	pending []result[P]
	spare   []result[P]   // a written batch's array, for pending to reuse
	writing int           // results taken by the completer, not yet written
	ready   chan struct{} // capacity 1: something was added
}

func newResults[P any]() *results[P] { return &results[P]{ready: make(chan struct{}, 1)} }

func (r *results[P]) add(res result[P]) {
	r.mu.Lock()
	r.pending = append(r.pending, res)
	r.mu.Unlock()
	select {
	case r.ready <- struct{}{}:
	default:
	}
}

// take removes up to n pending results for writing. When it takes them
// all, the batch is the pending array itself, and pending goes on in the
// spare one: two arrays take turns, with nothing copied.
func (r *results[P]) take(n int) []result[P] {
	r.mu.Lock()
	defer r.mu.Unlock()
	var batch []result[P]
	switch {
	case len(r.pending) == 0:
		return nil
	case n >= len(r.pending):
		batch, r.pending, r.spare = r.pending, r.spare[:0], nil
	default:
		batch = append([]result[P](nil), r.pending[:n]...)
		left := copy(r.pending, r.pending[n:])
		clear(r.pending[left:])
		r.pending = r.pending[:left]
	}
	r.writing += len(batch)
	return batch
}

// written marks a taken batch as done with (written or given up); its
// array may then hold later results.
func (r *results[P]) written(batch []result[P]) {
	clear(batch) // its jobs and errors are not kept alive by the array
	r.mu.Lock()
	r.writing -= len(batch)
	if r.spare == nil {
		r.spare = batch[:0]
	}
	r.mu.Unlock()
}

// backlog is how many results are not yet recorded.
func (r *results[P]) backlog() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending) + r.writing
}

// finish hands a result to the completer; it never blocks.
func (w *Worker[P]) finish(res result[P]) { w.results.add(res) }

// completer writes results in batches: one CompleteMany and one FailMany
// statement for everything finished within FlushInterval (or FlushSize
// jobs, or once no handler is left running). A batch the database refuses is kept and retried with backoff,
// never dropped, until ctx ends; meanwhile handlers keep handing over
// results and the claim loop pauses claiming once the backlog is large.
// After stop is closed it writes what is left, until ctx ends, and
// returns the number of results it could not write and the last error.
func (w *Worker[P]) completer(ctx context.Context, stop <-chan struct{}) (unwritten int, lastErr error) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	flush := func() bool {
		for {
			batch := w.results.take(w.cfg.flushSize)
			if len(batch) == 0 {
				return true
			}
			err := w.write(ctx, batch)
			w.results.written(batch)
			if err != nil {
				lastErr = err
				unwritten += len(batch) + w.results.backlog()
				return false
			}
			if w.limited != nil {
				// The batch freed slots of the queue's limits: claim again
				// now rather than at the next LimitPollInterval.
				select {
				case w.wake <- struct{}{}:
				default:
				}
			}
		}
	}
	for {
		select {
		case <-w.results.ready:
			if !armed {
				timer.Reset(w.cfg.flushInterval)
				armed = true
			}
			// A full batch is written now; so is one that no running
			// handler could add to (none is running: waiting would only
			// hold the results, and on a queue with limits their slots).
			if w.results.backlog() >= w.cfg.flushSize || w.runningCount() == 0 {
				armed = false
				timer.Stop()
				if !flush() {
					return unwritten, lastErr
				}
			}
		case <-timer.C:
			armed = false
			if !flush() {
				return unwritten, lastErr
			}
		case <-stop:
			flush()
			return unwritten, lastErr
		}
	}
}

// write records one batch, retrying each statement until it succeeds or
// ctx ends (then it returns the error: the batch is given up, and its jobs
// come back when their leases expire).
func (w *Worker[P]) write(ctx context.Context, batch []result[P]) error {
	// In id order, as the heartbeat extends: two statements that lock the
	// same rows in one order cannot deadlock on them.
	slices.SortFunc(batch, func(a, b result[P]) int { return cmp.Compare(a.job.ID, b.job.ID) })
	var done []*Job[P]
	var after, at failures[P]
	var single []result[P]
	for _, r := range batch {
		switch {
		case r.kind == resultComplete:
			done = append(done, r.job)
		case r.kind == resultFail && r.at.IsZero():
			after.add(r)
		case r.kind == resultFail:
			at.add(r)
		default:
			single = append(single, r)
		}
	}
	if len(done) > 0 {
		if err := w.retry(ctx, "complete", len(done), func() error {
			n, err := w.q.CompleteMany(ctx, done)
			if err == nil && int(n) < len(done) {
				w.cfg.logger.Warn("some completed jobs were no longer held (their leases were lost); they may run again", "queue", w.name, "jobs", len(done)-int(n))
			}
			return err
		}); err != nil {
			return err
		}
	}
	if len(after.jobs) > 0 {
		if err := w.retry(ctx, "fail", len(after.jobs), func() error {
			_, err := w.q.FailManyAfter(ctx, after.jobs, after.causes, after.delays)
			return err
		}); err != nil {
			return err
		}
	}
	if len(at.jobs) > 0 {
		if err := w.retry(ctx, "fail", len(at.jobs), func() error {
			_, err := w.q.FailManyAt(ctx, at.jobs, at.causes, at.ats)
			return err
		}); err != nil {
			return err
		}
	}
	for _, r := range single {
		if err := w.retry(ctx, map[resultKind]string{resultSnooze: "snooze", resultDiscard: "discard", resultRelease: "release"}[r.kind], 1, func() error {
			var err error
			switch r.kind {
			case resultSnooze:
				err = w.q.SnoozeFor(ctx, r.job, r.delay)
			case resultDiscard:
				err = w.q.Discard(ctx, r.job, r.cause)
			case resultRelease:
				err = w.q.Release(ctx, r.job)
			}
			if errors.Is(err, ErrNotHeld) {
				return nil // fenced: another claim owns it now
			}
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// failures gathers the failed jobs of a batch in the parallel slices the
// batch statements take.
type failures[P any] struct {
	jobs   []*Job[P]
	causes []error
	delays []time.Duration
	ats    []time.Time
}

func (f *failures[P]) add(r result[P]) {
	f.jobs, f.causes, f.delays, f.ats = append(f.jobs, r.job), append(f.causes, r.cause), append(f.delays, r.delay), append(f.ats, r.at)
}

// maxWriteBackoff caps the wait between attempts to write a batch, so that
// writes resume soon after the database comes back.
const maxWriteBackoff = 500 * time.Millisecond

// retry runs one batch statement until it succeeds or ctx ends. When ctx
// ends after the database has refused the statement, it returns the
// database's last refusal, not the context's end: that is what kept the
// batch from being written, and what a ShutdownError should name.
func (w *Worker[P]) retry(ctx context.Context, kind string, size int, stmt func() error) error {
	backoff := 10 * time.Millisecond
	var refused error // the database's last refusal, while ctx lasted
	for attempt := 1; ; attempt++ {
		if refused != nil && ctx.Err() != nil {
			return refused
		}
		err := stmt()
		if err == nil {
			if h := w.cfg.hooks.Batch; h != nil {
				h(w.name, kind, size)
			}
			return nil
		}
		if ctx.Err() != nil {
			return cmp.Or(refused, err)
		}
		refused = err
		if mutant("drop-refused") {
			return nil
		}
		w.cfg.logger.Warn("writing finished jobs failed; retrying", "queue", w.name, "kind", kind, "jobs", size, "attempt", attempt, "err", err)
		sleep(ctx, backoff)
		backoff = min(2*backoff, maxWriteBackoff)
	}
}
