package queue

import (
	"context"
	"time"
)

// Limits are a queue's concurrency limits (the spec's limits key) and
// rate limit (its rate key), held by the database. Concurrency: every
// claim counts the jobs that hold a lease, under the queue's claim lock,
// and takes no more than the limits leave room for, so they hold across
// every worker and node. A job holds its slot from its
// claim until it completes, fails, snoozes, is released or discarded, or
// its node is released; a job whose lease expired keeps the slot until a
// claim takes it again.
//
// The accessor of a queue with limits has a Limits method. Its Worker
// claims again every LimitPollInterval while a claim comes back short
// and due jobs wait, since slots free up on other nodes without notice.
type Limits struct {
	// PerKey is the most jobs with one value of the queue's fair_by
	// column that run at once; 0 for no limit.
	PerKey int
	// Global is the most jobs of the queue that run at once; 0 for no
	// limit.
	Global int
	// Rate is the most jobs claimed in any window of length Per (per
	// value of the fair_by column when RateByKey); 0 for no rate limit.
	// Each claim counts the claims of the window in the queue's rate log.
	Rate int
	// Per is the rate window's length.
	Per time.Duration
	// RateByKey applies Rate to each value of the fair_by column rather
	// than to the queue.
	RateByKey bool
}

// limitedQueue is what a queue with limits adds to a LeaseQueue.
type limitedQueue interface {
	Limits() Limits
	DepthAtMost(ctx context.Context, limit int) (int64, error)
}

// heldBack reports whether a claim that came back short left due jobs
// behind, which on a queue with limits means the limits held them back.
// An error counts as held back: the worker then looks again soon.
func heldBack(ctx context.Context, q limitedQueue) bool {
	n, err := q.DepthAtMost(ctx, 1)
	return err != nil || n > 0
}
