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

// ErrNotFound is returned by Get when the queue has no job with the id:
// there never was one, or it was deleted (on success, by retention, by an
// operator). The error Get returns is a *NotFoundError, which names the
// queue and id and also wraps the driver's own "no rows" error.
var ErrNotFound = errors.New("queue: no such job")

// ErrConnSettings is wrapped by the error an accessor returns when its
// database connection is not opened as the generated code needs: on MySQL,
// without parseTime=true, with a loc other than UTC, or with
// clientFoundRows=true. The error names the setting to change.
var ErrConnSettings = errors.New("queue: the database connection is not opened as queuegen's code needs")

// ErrTooLong is wrapped by the error Push returns for a unique key, and
// Claim for a node id, longer than the engine's column holds (see the
// README's limits per engine). Nothing was written.
var ErrTooLong = errors.New("queue: value longer than its column holds")

// TooLongError is the error for a unique key or node id that is too long:
// errors.Is(err, ErrTooLong) is true.
type TooLongError struct {
	// What is "unique key" or "node id".
	What string
	// Length is the value's length and Max the most the column holds,
	// both in Unit: "bytes", "characters" or "UTF-16 code units".
	Length, Max int
	Unit        string
	// Column says which column of which engine sets the limit.
	Column string
}

// Error says how long the value is and what holds it.
func (e *TooLongError) Error() string {
	return fmt.Sprintf("queue: the %s is %d %s long, and %s holds at most %d: use a shorter one (a hash of it, say)", e.What, e.Length, e.Unit, e.Column, e.Max)
}

// Is makes errors.Is(err, ErrTooLong) true.
func (e *TooLongError) Is(target error) bool { return target == ErrTooLong }

// ErrNotStorable is wrapped by the error Push and PushMany return for a
// payload value the engine's column cannot hold (on MySQL, a NaN or an
// infinity); nothing was written.
var ErrNotStorable = errors.New("queue: value the database cannot store")

// NotFoundError is Get's error for a job that is not there: errors.Is(err,
// ErrNotFound) is true, and so is errors.Is(err, the driver's no-rows
// error) (pgx.ErrNoRows, sql.ErrNoRows), as before ErrNotFound existed.
type NotFoundError struct {
	// Queue is the queue that was read.
	Queue string
	// ID is the id that was asked for.
	ID int64
	// Err is the driver's error for no rows.
	Err error
}

// Error names the queue and the id.
func (e *NotFoundError) Error() string {
	return fmt.Sprintf("queue %s: no job %d", e.Queue, e.ID)
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// Unwrap returns the driver's error for no rows.
func (e *NotFoundError) Unwrap() error { return e.Err }

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
