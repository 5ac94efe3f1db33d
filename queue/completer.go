package queue

import (
	"context"
	"time"
)

// finish is a handler's result waiting to be written: a completion, or a
// failure with its retry delay.
type finish[P any] struct {
	job      *Job[P]
	complete bool
	cause    error
	delay    time.Duration
	at       time.Time // when set, retry at this time rather than after delay
}

// finish hands a result to the completer. After shutdown has stopped the
// completer, a late result (from a handler that ignored cancellation) is
// dropped: its job comes back when the lease expires.
func (w *Worker[P]) finish(f finish[P]) {
	select {
	case w.done <- f:
	case <-w.stop:
		select {
		case w.done <- f: // the completer drains what is already sent
		default:
		}
	}
}

// completer writes results in batches: one CompleteMany and one FailMany
// statement for everything finished within FlushInterval (or FlushSize
// jobs). A batch the database refuses (it is down, say) is kept and
// retried with backoff, never dropped; meanwhile handlers wait to hand
// over more results, which bounds what is held in memory.
func (w *Worker[P]) completer(ctx context.Context) {
	var pending []finish[P]
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		for len(pending) > 0 {
			n := min(len(pending), w.cfg.flushSize)
			if w.write(ctx, pending[:n]) {
				pending = pending[n:]
				continue
			}
			return // ctx ended: give up on the rest (leases expire, jobs return)
		}
	}
	for {
		select {
		case f := <-w.done:
			if len(pending) == 0 {
				timer.Reset(w.cfg.flushInterval)
			}
			pending = append(pending, f)
			if len(pending) >= w.cfg.flushSize {
				flush()
			}
		case <-timer.C:
			flush()
		case <-w.stop:
		drain:
			for {
				select {
				case f := <-w.done:
					pending = append(pending, f)
				default:
					break drain
				}
			}
			flush()
			return
		}
	}
}

// write stores one batch, retrying each statement until it succeeds or
// ctx ends; it reports whether the whole batch was written.
func (w *Worker[P]) write(ctx context.Context, batch []finish[P]) bool {
	var done []*Job[P]
	var after, at failures[P]
	for _, f := range batch {
		switch {
		case f.complete:
			done = append(done, f.job)
		case f.at.IsZero():
			after.add(f)
		default:
			at.add(f)
		}
	}
	if len(done) > 0 && !w.retry(ctx, "complete", len(done), func() error {
		ids, err := w.q.CompleteMany(ctx, done)
		if err == nil && len(ids) < len(done) {
			w.cfg.logger.Warn("some completed jobs were no longer held (their leases were lost); they may run again", "queue", w.name, "jobs", len(done)-len(ids))
		}
		return err
	}) {
		return false
	}
	if len(after.jobs) > 0 && !w.retry(ctx, "fail", len(after.jobs), func() error {
		_, err := w.q.FailManyAfter(ctx, after.jobs, after.causes, after.delays)
		return err
	}) {
		return false
	}
	if len(at.jobs) > 0 && !w.retry(ctx, "fail", len(at.jobs), func() error {
		_, err := w.q.FailManyAt(ctx, at.jobs, at.causes, at.ats)
		return err
	}) {
		return false
	}
	return true
}

// failures gathers the failed jobs of a batch in the parallel slices the
// batch statements take.
type failures[P any] struct {
	jobs   []*Job[P]
	causes []error
	delays []time.Duration
	ats    []time.Time
}

func (f *failures[P]) add(r finish[P]) {
	f.jobs, f.causes, f.delays, f.ats = append(f.jobs, r.job), append(f.causes, r.cause), append(f.delays, r.delay), append(f.ats, r.at)
}

// retry runs one batch statement until it succeeds or ctx ends.
func (w *Worker[P]) retry(ctx context.Context, kind string, size int, stmt func() error) bool {
	backoff := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := stmt()
		if err == nil {
			if h := w.cfg.hooks.Batch; h != nil {
				h(w.name, kind, size)
			}
			return true
		}
		if ctx.Err() != nil {
			w.cfg.logger.Error("could not write finished jobs before shutdown ended; they will be worked again when their leases expire",
				"queue", w.name, "kind", kind, "jobs", size, "err", err)
			return false
		}
		w.cfg.logger.Warn("writing finished jobs failed; retrying", "queue", w.name, "kind", kind, "jobs", size, "attempt", attempt, "err", err)
		sleep(ctx, backoff)
		backoff = min(2*backoff, 2*time.Second)
	}
}
