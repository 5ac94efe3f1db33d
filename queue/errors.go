package queue

import (
	"errors"
	"fmt"
)

// ErrNotHeld is returned by Complete, Fail, Snooze, Extend and Release when
// the caller no longer holds the job's attempt: the job was claimed again
// after the lease expired, or was already finished. Nothing was changed.
var ErrNotHeld = errors.New("queue: job attempt is no longer held by this caller")

// ErrNoUniqueKey is returned by Push when the UniqueKey option is given to a
// queue whose spec does not set unique: true.
var ErrNoUniqueKey = errors.New("queue: this queue has no unique key (set unique: true in the spec)")

// NotHeldError wraps ErrNotHeld with the job it was about.
type NotHeldError struct {
	// Queue is the job's queue.
	Queue string
	// ID is the job's id.
	ID int64
	// Attempt is the attempt the caller held.
	Attempt int32
}

// Error names the queue, job and attempt that are no longer held.
func (e *NotHeldError) Error() string {
	return fmt.Sprintf("queue %s: job %d attempt %d is no longer held by this caller", e.Queue, e.ID, e.Attempt)
}

// Unwrap makes errors.Is(err, ErrNotHeld) true.
func (e *NotHeldError) Unwrap() error { return ErrNotHeld }
