package queueimpl

import "sync"

// Rotation is where an accessor's next fair claim starts: after the
// fair_by value at which its previous claim stopped, so that claims of a
// few jobs each take the values in turn rather than the first ones every
// time. Its zero value starts at the first value. It is safe for
// concurrent use; an accessor's WithTx copies share their accessor's.
type Rotation[K any] struct {
	mu    sync.Mutex
	after []K
}

// After is the claim's after argument: the value the previous claim
// stopped at, or none before the first claim (an array of one value or of
// none, so that the statement receives it with the column's own type).
func (r *Rotation[K]) After() []K {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.after
}

// Stopped records where a claim stopped: the value of the last job it
// returned, in the order it took them.
func (r *Rotation[K]) Stopped(k K) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.after = []K{k}
}
