package queue

import (
	"errors"
	"time"
)

// PushOption changes how Push and PushMany insert a job. An option given a
// value out of its range (a negative Delay, an empty UniqueKey) makes Push
// and PushMany return an *OptionError, wrapping ErrOption, before any
// statement.
type PushOption interface {
	applyPush(*PushOptions) error
}

type pushOption func(*PushOptions) error

func (f pushOption) applyPush(o *PushOptions) error { return f(o) }

// PushOptions are the resolved push options. Generated accessors read them;
// applications use the option functions.
type PushOptions struct {
	// RunAfter, when set, is when the job becomes claimable.
	RunAfter *time.Time
	// Delay is added to the database's now() when RunAfter is not set.
	Delay time.Duration
	// Now, when set, replaces the database clock for created_at and as the
	// base of Delay: the caller's clock, where every pusher shares one.
	Now *time.Time
	// Priority orders claims on queues with priority: true, highest first.
	Priority int16
	// MaxAttempts overrides the queue's max_attempts when > 0.
	MaxAttempts int32
	// UniqueKey, when set, dedupes among unfinished jobs of the queue.
	UniqueKey *string
}

// ApplyPushOptions applies opts to o in order; it stops at the first bad
// one and returns its error. Generated accessors call it (through
// queueimpl.ResolvePush).
func ApplyPushOptions(o *PushOptions, opts []PushOption) error {
	for _, opt := range opts {
		if opt == nil {
			return badOption("PushOption", nil, "must not be nil")
		}
		if err := opt.applyPush(o); err != nil {
			return err
		}
	}
	return nil
}

// RunAfter makes the job claimable only from t on; t must not be the zero
// time.
func RunAfter(t time.Time) PushOption {
	return pushOption(func(o *PushOptions) error {
		if t.IsZero() {
			return badOption("RunAfter", t, "must not be the zero time")
		}
		o.RunAfter = &t
		return nil
	})
}

// Delay makes the job claimable d after it is pushed, by the database
// clock; d must not be negative.
func Delay(d time.Duration) PushOption {
	return pushOption(func(o *PushOptions) error {
		if err := notNegative("Delay", d); err != nil {
			return err
		}
		o.Delay = d
		return nil
	})
}

// PushedAt uses t instead of the database clock as the push time; t must
// not be the zero time.
func PushedAt(t time.Time) PushOption {
	return pushOption(func(o *PushOptions) error {
		if t.IsZero() {
			return badOption("PushedAt", t, "must not be the zero time")
		}
		o.Now = &t
		return nil
	})
}

// Priority sets the job's priority; higher runs first on queues declared
// with priority: true, and is recorded but ignored elsewhere. Every int16
// is accepted (the column is a smallint).
func Priority(p int16) PushOption {
	return pushOption(func(o *PushOptions) error { o.Priority = p; return nil })
}

// MaxAttempts overrides the queue's max_attempts for this job; n must be
// at least 1.
func MaxAttempts(n int32) PushOption {
	return pushOption(func(o *PushOptions) error {
		if n < 1 {
			return badOption("MaxAttempts", n, "must be at least 1 (omit the option for the queue's max_attempts)")
		}
		o.MaxAttempts = n
		return nil
	})
}

// UniqueKey dedupes the job: while an unfinished job of the queue holds
// key, Push inserts nothing and reports Duplicate. Only on queues declared
// with unique: true. The key must not be empty.
func UniqueKey(key string) PushOption {
	return pushOption(func(o *PushOptions) error {
		if key == "" {
			return badOption("UniqueKey", key, "must not be empty")
		}
		o.UniqueKey = &key
		return nil
	})
}

// ErrPushManyOption is returned by PushMany for options that a bulk insert
// cannot honour: it has no ON CONFLICT (UniqueKey) and no database clock to
// add a Delay to (use RunAfter).
var ErrPushManyOption = errors.New("queue: PushMany takes RunAfter, Priority and MaxAttempts only (a bulk insert cannot dedupe or compute times; use Push for UniqueKey, and RunAfter instead of Delay)")
