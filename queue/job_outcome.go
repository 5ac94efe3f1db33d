package queue

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// Handler works one job. Its result decides what happens to the job:
//   - nil: the job is completed;
//   - an error: the attempt failed; the job is retried after the queue's
//     backoff, or is dead once it has used its attempts;
//   - SnoozeFor(d): the job is put back for d without using up an attempt;
//   - RetryAt(t, err): the attempt failed and the job is retried at t;
//   - Discard(err): the job is dead now, whatever attempts remain.
//
// A panic is recovered and fails the attempt with the panic value and the
// stack. The context is cancelled when the job's lease is lost, or when the
// worker shuts down and its grace period ends.
type Handler[P any] func(ctx context.Context, job *Job[P]) error

// SnoozeFor returns the handler result that puts the job back for d without
// using up an attempt.
func SnoozeFor(d time.Duration) error { return &snoozeError{d: d} }

// RetryAt returns the handler result that fails the attempt with err and
// retries the job at t rather than after the backoff. A t past the end of
// year 9999 (as far as MySQL's and SQL Server's times go) counts as that
// end, and a t before 1970 as 1970 (due at once), so that no database
// refuses the failure.
func RetryAt(t time.Time, err error) error {
	switch {
	case t.IsZero():
	case t.Before(minRetryAt):
		t = minRetryAt
	case t.After(maxRetryAt):
		t = maxRetryAt
	}
	return &retryAtError{at: t, err: err}
}

var (
	minRetryAt = time.Unix(0, 0).UTC()
	maxRetryAt = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// Discard returns the handler result that makes the job dead now, keeping
// err's text, whatever attempts remain.
func Discard(err error) error { return &discardError{err: err} }

type snoozeError struct{ d time.Duration }

func (e *snoozeError) Error() string { return fmt.Sprintf("snoozed for %s", e.d) }

type retryAtError struct {
	at  time.Time
	err error
}

func (e *retryAtError) Error() string {
	return fmt.Sprintf("%s (retry at %s)", errorText(e.err), e.at.Format(time.RFC3339))
}
func (e *retryAtError) Unwrap() error { return e.err }

type discardError struct{ err error }

func (e *discardError) Error() string { return "discarded: " + errorText(e.err) }
func (e *discardError) Unwrap() error { return e.err }

// Outcome is what became of one run of a handler.
type Outcome string

// The outcomes reported to Hooks.JobFinished.
const (
	OutcomeCompleted Outcome = "completed"
	OutcomeFailed    Outcome = "failed" // will be retried
	OutcomeDead      Outcome = "dead"
	OutcomeSnoozed   Outcome = "snoozed"
	OutcomeReleased  Outcome = "released" // given back at shutdown
	OutcomeLost      Outcome = "lost"     // the heartbeat found the job claimed again or finished elsewhere
	// OutcomeRolledBack: a transaction-mode handler hit a serialization
	// failure or deadlock; the transaction was rolled back and the job
	// returned, its attempt untouched, to be claimed again.
	OutcomeRolledBack Outcome = "rolled back"
)

func classify(err error) (snooze *snoozeError, retryAt *retryAtError, discard *discardError) {
	errors.As(err, &snooze)
	errors.As(err, &retryAt)
	errors.As(err, &discard)
	return
}

// TimeoutError is the error kept for an attempt whose handler ran longer
// than the worker's JobTimeout.
type TimeoutError struct {
	// After is the worker's JobTimeout.
	After time.Duration
}

// withJobTimeout is ctx ended, with a TimeoutError as its cause, after d;
// ctx itself when d is not positive (no JobTimeout).
func withJobTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, d, &TimeoutError{After: d})
}

// timedOut is the handler's error err, or the TimeoutError that ended its
// context ctx when it gave up for running out of time.
func timedOut(ctx context.Context, err error) error {
	if err == nil { // the hot path: nothing to look for, nothing allocated
		return nil
	}
	if te := (*TimeoutError)(nil); errors.As(context.Cause(ctx), &te) {
		return te
	}
	return err
}

// Error says how long the job ran.
func (e *TimeoutError) Error() string { return fmt.Sprintf("job timed out after %s", e.After) }

// recovered runs f, turning a panic into an error with the panic value and
// the stack, so that a panicking handler fails its attempt and the worker
// goes on.
func recovered(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s%v\n%s", panicPrefix, p, debug.Stack())
		}
	}()
	return f()
}

// retryPlan is when to retry a failed attempt of job, and the error to
// record: the time RetryAt asked for (at), or the queue's backoff delay,
// counted on the database clock. The backoff grows with the job's
// failures, this one included, not with its attempt: snoozes, releases and
// lost leases use attempts without failing.
func retryPlan[P any](q interface{ RetryDelay(int32) time.Duration }, job *Job[P], err error, retryAt *retryAtError) (delay time.Duration, at time.Time, cause error) {
	if retryAt != nil {
		return 0, retryAt.at, retryAt.err
	}
	return q.RetryDelay(int32(len(job.Errors)) + 1), time.Time{}, err
}

// errorText is the text of err, or a stand-in for a nil error.
func errorText(err error) string {
	if err == nil {
		return "failed without an error"
	}
	return err.Error()
}
