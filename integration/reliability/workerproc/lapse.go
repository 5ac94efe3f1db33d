package main

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/queuegen/queuegen/queue"
)

// A lapse is a moment this process itself saw one of its leases run out:
// it acted on a job (its handler returned, the heartbeat sent an extension,
// a completion was sent, or came back) after the job's lease had ended by
// its own clock, reckoned as the runtime reckons it (from the time the
// claim was sent, moved to the time each extension that held it was sent,
// plus the lease). A lapse is logged to table lapsed, with why, before the
// process goes on, so the test can tell a re-delivery that followed the
// holder's own lapse (a process starved of CPU past its lease: at least
// once, as promised) from one whose holder still had a live lease (a bug).
const (
	lapseHandler  = "handler"    // the handler returned after the lease ran out (the runtime cancels it, and writes nothing)
	lapseBeat     = "heartbeat"  // an extension was sent after the lease ran out
	lapseComplete = "completion" // the completion was sent after the lease ran out
	lapseInFlight = "in flight"  // the completion came back after the lease ran out
)

// jobKey is one attempt of a job.
type jobKey struct {
	id      int64
	attempt int32
}

// leases keeps each held job's lease deadline by this process's clock and
// logs the lapses it sees with record.
type leases struct {
	lease  time.Duration
	record func(ctx context.Context, id int64, attempt int32, why string)

	mu       sync.Mutex
	deadline map[jobKey]time.Time
}

// lapsed logs a lapse of k if at is past its deadline.
func (l *leases) lapsed(k jobKey, at time.Time, why string) bool {
	l.mu.Lock()
	d, ok := l.deadline[k]
	l.mu.Unlock()
	if ok && at.After(d) {
		l.record(context.Background(), k.id, k.attempt, why)
		return true
	}
	return false
}

// watched is a queue whose leases a leases watches: its Claim, ExtendMany
// and CompleteMany move and check the deadlines; everything else is the
// queue's own (the methods the runtime looks for by interface included).
type watched[P any] struct {
	queue.LeaseQueue[P]
	l *leases
}

// watch wraps q; a queue with limits keeps them.
func watch[P any](q queue.LeaseQueue[P], l *leases) queue.LeaseQueue[P] {
	l.lease = q.LeaseDuration()
	w := &watched[P]{LeaseQueue: q, l: l}
	if _, ok := q.(interface{ Limits() queue.Limits }); ok {
		return watchedLimited[P]{w}
	}
	return w
}

func (w *watched[P]) Claim(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]*queue.Job[P], error) {
	asked := time.Now() // the runtime's leases run from no later than this
	jobs, err := w.LeaseQueue.Claim(ctx, node, max, opts...)
	w.l.mu.Lock()
	for _, j := range jobs {
		w.l.deadline[jobKey{j.ID, j.Attempt}] = asked.Add(w.l.lease)
	}
	w.l.mu.Unlock()
	return jobs, err
}

func (w *watched[P]) ExtendMany(ctx context.Context, jobs []*queue.Job[P], d time.Duration) ([]int64, error) {
	sent := time.Now()
	for _, j := range jobs {
		w.l.lapsed(jobKey{j.ID, j.Attempt}, sent, lapseBeat)
	}
	ids, err := w.LeaseQueue.ExtendMany(ctx, jobs, d)
	if err == nil {
		held := make(map[int64]bool, len(ids))
		for _, id := range ids {
			held[id] = true
		}
		w.l.mu.Lock()
		for _, j := range jobs {
			k := jobKey{j.ID, j.Attempt}
			if _, ok := w.l.deadline[k]; ok && held[j.ID] {
				w.l.deadline[k] = sent.Add(d)
			}
		}
		w.l.mu.Unlock()
	}
	return ids, err
}

func (w *watched[P]) CompleteMany(ctx context.Context, jobs []*queue.Job[P]) (int64, error) {
	sent := time.Now()
	late := map[jobKey]bool{}
	for _, j := range jobs {
		late[jobKey{j.ID, j.Attempt}] = w.l.lapsed(jobKey{j.ID, j.Attempt}, sent, lapseComplete)
	}
	n, err := w.LeaseQueue.CompleteMany(ctx, jobs)
	back := time.Now()
	if err == nil && int(n) < len(jobs) {
		// Some were not completed: those whose lease ran out while the
		// statement ran were lapses the holder saw.
		for k, sentLate := range late {
			if !sentLate {
				w.l.lapsed(k, back, lapseInFlight)
			}
		}
	}
	if err == nil {
		w.l.mu.Lock()
		for k := range late {
			delete(w.l.deadline, k)
		}
		w.l.mu.Unlock()
	}
	return n, err
}

// ended is called by the handler as it returns: a handler that returns
// after the lease ran out (or that the runtime cancelled for it) saw a
// lapse; the runtime writes nothing for it.
func (l *leases) ended(ctx context.Context, id int64, attempt int32) {
	k := jobKey{id, attempt}
	if l.lapsed(k, time.Now(), lapseHandler) {
		return
	}
	if cause := context.Cause(ctx); cause != nil && strings.Contains(cause.Error(), "lease expired") {
		l.record(context.Background(), id, attempt, lapseHandler)
	}
}

// The methods the runtime and the accessors' callers look for by
// interface, passed through.

func (w *watched[P]) CheckNode(node string) error {
	if c, ok := w.LeaseQueue.(interface{ CheckNode(string) error }); ok {
		return c.CheckNode(node)
	}
	return nil
}

func (w *watched[P]) BeatNode(ctx context.Context, b queue.NodeBeat) error {
	if r, ok := w.LeaseQueue.(interface {
		BeatNode(context.Context, queue.NodeBeat) error
	}); ok {
		return r.BeatNode(ctx, b)
	}
	return nil
}

func (w *watched[P]) ForgetNode(ctx context.Context, node string) error {
	if r, ok := w.LeaseQueue.(interface {
		ForgetNode(context.Context, string) error
	}); ok {
		return r.ForgetNode(ctx, node)
	}
	return nil
}

// watchedLimited is watched for a queue with limits.
type watchedLimited[P any] struct{ *watched[P] }

func (w watchedLimited[P]) Limits() queue.Limits {
	return w.LeaseQueue.(interface{ Limits() queue.Limits }).Limits()
}

func (w watchedLimited[P]) DepthAtMost(ctx context.Context, limit int) (int64, error) {
	return w.LeaseQueue.(interface {
		DepthAtMost(context.Context, int) (int64, error)
	}).DepthAtMost(ctx, limit)
}
