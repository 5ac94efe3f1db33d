package queue

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// claimRoom counts a worker's jobs from their claim until their handlers
// return, and sizes its claims. At most Concurrency handlers run at once
// (the handler pool has that many goroutines), but a worker whose
// handlers are quick may hold more. While a claim is in flight, handlers
// go on finishing jobs; a claim sized only to the handlers free when it
// was sent leaves them idle for its round trip, and comes back small. So
// the worker keeps the time its handlers and its claims take (moving
// averages) and holds ahead of its handlers, queued in the pool, as many
// jobs as its handlers finish in two claims' time: Concurrency × 2 ×
// claim time ÷ handler time, at most Claimers × MaxClaim (so that each
// claim loop can have a full claim in flight). Jobs held ahead are leased
// like running ones (the heartbeat extends their leases too). Handlers
// that take much longer than a claim hold next to nothing ahead: their
// worker claims, as it always did, for the handlers free; so does a worker
// none of whose handlers has returned yet. A queue with
// limits never claims ahead: a job held ahead would count against the
// limits without running.
type claimRoom struct {
	mu    sync.Mutex
	held  int           // jobs claimed (or being claimed) whose handlers have not returned
	most  int           // the most jobs held ahead: Claimers × MaxClaim
	freed chan struct{} // capacity 1: a handler returned, or a claim came back short

	handlerTime atomic.Int64 // moving average of a handler's run, in ns
	claimTime   atomic.Int64 // moving average of a claim's round trip, in ns
}

// newClaimRoom is the room of a worker that holds at most most jobs ahead
// of its handlers (Claimers × MaxClaim).
func newClaimRoom(most int) claimRoom {
	return claimRoom{freed: make(chan struct{}, 1), most: most}
}

// average moves the average in a by one sample (a weight of 1/8); racing
// updates may lose a sample, which an average can spare.
func average(a *atomic.Int64, d time.Duration) {
	old := a.Load()
	if old == 0 {
		a.Store(int64(d))
		return
	}
	a.Store(old + (int64(d)-old)/8)
}

// finish frees a job's room; d is how long its handler ran (0: none ran
// it, which says nothing of the handlers' time).
func (r *claimRoom) finish(d time.Duration) {
	if d > 0 {
		average(&r.handlerTime, d)
	}
	r.release(1)
}

// release gives back the room of n jobs.
func (r *claimRoom) release(n int) {
	if n <= 0 {
		return
	}
	r.mu.Lock()
	r.held -= n
	r.mu.Unlock()
	select {
	case r.freed <- struct{}{}:
	default:
	}
}

// claimed records a claim's round trip d. A queue with limits records
// none: it never claims ahead.
func (r *claimRoom) claimed(d time.Duration) {
	average(&r.claimTime, d)
}

// ahead is how many jobs may be held beyond the concurrency, from the
// averages as they are now: a handler's return counts at once, not at
// the next claim's end, so the claim after a worker's first one is already
// sized for quick handlers. Until a handler has returned, the handlers'
// time is unknown: nothing is held ahead, so that a worker starting
// beside others, or whose handlers run for minutes, takes no more than its
// handlers run (and until a claim is recorded, its time is 0: a queue
// with limits holds nothing ahead). Called with mu held.
func (r *claimRoom) ahead(concurrency int) int {
	h := r.handlerTime.Load()
	if h <= 0 {
		return 0
	}
	return int(min(int64(r.most), 2*int64(concurrency)*r.claimTime.Load()/h))
}

// reserve returns how many jobs the next claim may take, counting them
// as held, or 0 when it should wait: there is no room, or the handlers
// still have jobs queued and a full claim does not fit yet.
func (r *claimRoom) reserve(concurrency, maxClaim int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	free := concurrency + r.ahead(concurrency) - r.held
	if free <= 0 || r.held >= concurrency && free < maxClaim {
		return 0
	}
	n := min(free, maxClaim)
	r.held += n
	return n
}

// waitRoom waits until a claim may be sent and returns how many jobs it
// takes, counted as held; 0 when ctx ended first.
func (w *Worker[P]) waitRoom(ctx context.Context) int {
	for {
		if n := w.room.reserve(w.cfg.concurrency, w.cfg.maxClaim); n > 0 {
			return n
		}
		select {
		case <-w.room.freed:
		case <-ctx.Done():
			return 0
		}
	}
}
