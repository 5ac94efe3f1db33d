package queue

import (
	"strings"
	"time"
)

// State is where a job is in its life.
type State string

// The states a job row can be in. They are the values of the state column.
const (
	// StateAvailable jobs wait for run_after to pass and a claimer to take
	// them. A failed attempt that will be retried is available again.
	StateAvailable State = "available"
	// StateRunning jobs are leased to a worker until locked_until (lease
	// mode only).
	StateRunning State = "running"
	// StateSucceeded jobs completed and are kept (on_success: keep).
	StateSucceeded State = "succeeded"
	// StateDead jobs used up their attempts or were discarded; their
	// errors are kept.
	StateDead State = "dead"
)

// Job is one claimed (or fetched) job of a queue whose payload is P.
//
// ID and Attempt together are the job's fencing token: Complete, Fail,
// Extend and Release change the row only while it is still at this attempt,
// so a worker whose lease expired cannot finish a later attempt.
type Job[P any] struct {
	// ID is the job's row id, unique in its queue.
	ID int64
	// State is where the job is in its life.
	State State
	// Attempt counts the job's claims, this one included (0 before the
	// first); it is the job's fencing token with ID.
	Attempt int32
	// MaxAttempts is how many attempts the job may use before it is dead;
	// snoozes and releases raise it, so that they use none.
	MaxAttempts int32
	// Priority orders claims where the queue has priority: true, highest
	// first.
	Priority int16
	// CreatedAt is when the job was pushed.
	CreatedAt time.Time
	// RunAfter is when the job is, or was, due.
	RunAfter time.Time
	// AttemptedAt is when the current attempt was claimed.
	AttemptedAt *time.Time
	// LockedBy is the node holding the lease (lease mode), or "".
	LockedBy string
	// LockedUntil is when the lease expires (lease mode), or nil.
	LockedUntil *time.Time
	// Errors are the errors of the failed attempts, oldest first: each
	// error's text, with invalid UTF-8 and NUL bytes replaced and cut to
	// 16 KiB.
	Errors []string
	// Failures are Errors with when and at which attempt each was
	// recorded: one per entry of Errors, in the same order. An error
	// recorded before the table had its failures column (a migration of
	// queuegen 0.x adds it) has a zero At and Attempt.
	Failures []Failure
	// Payload is the job's typed payload.
	Payload P
}

// PushResult says what Push did.
type PushResult struct {
	// ID is the new job's id; 0 when Duplicate.
	ID int64
	// RunAfter is when the job becomes claimable. On MySQL and MariaDB,
	// which cannot return it from the insert, it is zero when the
	// database's clock decided it (no RunAfter option).
	RunAfter time.Time
	// Duplicate is true when the queue has a unique key and an unfinished
	// job already holds it: nothing was inserted.
	Duplicate bool
}

// Failure is one of a job's errors with when and at which attempt it was
// recorded.
type Failure struct {
	// At is when the error was recorded, by the database's clock; zero
	// when unknown (recorded before the failures column existed).
	At time.Time
	// Attempt is the attempt that failed (Job.Attempt then); 0 when
	// unknown.
	Attempt int32
	// Error is the error's text, as in Job.Errors, less the stack where
	// the handler panicked.
	Error string
	// Stack is the stack of the goroutine whose handler panicked, from
	// the error the worker recorded for the panic; "" otherwise. The
	// error's text and its stack are kept together and cut to 16 KiB.
	Stack string
}

// SplitStack splits the text of an error a worker recorded for a
// panicking handler ("panic: " and the value, then the goroutine's stack)
// into the message and the stack; other text is all message.
func SplitStack(text string) (message, stack string) {
	if !strings.HasPrefix(text, panicPrefix) {
		return text, ""
	}
	i := strings.Index(text, "\ngoroutine ")
	if i < 0 {
		return text, ""
	}
	return text[:i], text[i+1:]
}

// panicPrefix begins the error a worker records for a panicking handler
// (see recovered): the panic's value follows, then the stack.
const panicPrefix = "panic: "
