package queue

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// leaseGroup cancels the handlers of one claimed batch whose leases run
// out before the heartbeat extends them, with one timer for the batch
// rather than one per job: the jobs of a claim share their lease's start.
// The timer fires at the earliest deadline among the batch's running jobs;
// it cancels those whose deadline has come and sets itself for the next,
// so each job is cancelled when its own lease runs out, extended or not.
type leaseGroup[P any] struct {
	start time.Time // the clock deadlines count from

	mu    sync.Mutex
	jobs  []*runningJob[P] // running, not yet cancelled; nil once pruned
	left  atomic.Int32     // jobs whose handlers have not returned
	timer *time.Timer
}

// watchLeases starts the lease timer of a claimed batch, whose leases run
// for lease from asked, when the claim was sent: the database's leases
// began later, so the local ones never outlast them.
func watchLeases[P any](rs []*runningJob[P], asked time.Time, lease time.Duration) {
	// A copy: expire prunes the group's list in place, while the caller
	// goes on to hand rs to the handler pool.
	g := &leaseGroup[P]{start: asked, jobs: slices.Clone(rs)}
	g.left.Store(int32(len(rs)))
	deadline := int64(lease)
	for _, r := range rs {
		r.leases = g
		r.deadline.Store(deadline)
	}
	g.mu.Lock()
	g.timer = time.AfterFunc(lease-time.Since(asked), g.expire)
	g.mu.Unlock()
}

// now is the time since the group started, on the monotonic clock.
func (g *leaseGroup[P]) now() int64 { return int64(time.Since(g.start)) }

// extend moves r's deadline to lease from sent, when the heartbeat sent
// the statement that extended its lease in the database.
func (g *leaseGroup[P]) extend(r *runningJob[P], sent time.Time, lease time.Duration) {
	r.deadline.Store(int64(sent.Sub(g.start)) + int64(lease))
}

// done says r's handler returned; the timer stops with the batch's last.
func (g *leaseGroup[P]) done(r *runningJob[P]) {
	r.finished.Store(true)
	if g.left.Add(-1) == 0 {
		g.mu.Lock()
		g.timer.Stop()
		g.jobs = nil
		g.mu.Unlock()
	}
}

// expire cancels the jobs whose lease ran out and sets the timer for the
// next deadline.
func (g *leaseGroup[P]) expire() {
	g.mu.Lock()
	defer g.mu.Unlock()
	now, next := g.now(), int64(-1)
	kept := g.jobs[:0]
	for _, r := range g.jobs {
		switch d := r.deadline.Load(); {
		case r.finished.Load():
		case d <= now:
			r.cancel(errLeaseExpired)
		default:
			kept = append(kept, r)
			if next < 0 || d < next {
				next = d
			}
		}
	}
	clear(g.jobs[len(kept):])
	g.jobs = kept
	if next >= 0 {
		g.timer.Reset(time.Duration(next - now))
	}
}
