package queue

import (
	"context"
	"sync"
	"time"
)

// pauseGate reads a queue's pause flag at most once per interval, however
// often it is asked: a pause must reach every worker within about that
// long, but must not add a query to every claim. One gate serves all the
// claim loops of a worker.
type pauseGate struct {
	read     func(context.Context) (bool, error)
	interval time.Duration

	mu      sync.Mutex
	checked time.Time
	paused  bool
}

// hold reports whether the queue is paused; if so it first waits out the
// interval (or ctx), so the caller can simply look again.
func (g *pauseGate) hold(ctx context.Context) bool {
	g.mu.Lock()
	if time.Since(g.checked) >= g.interval {
		if paused, err := g.read(ctx); err == nil {
			g.paused = paused
		} // a failed read keeps the last answer; the claim will fail too
		g.checked = time.Now()
	}
	paused := g.paused
	g.mu.Unlock()
	if paused {
		sleep(ctx, g.interval)
	}
	return paused
}
