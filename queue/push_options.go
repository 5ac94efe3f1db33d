package queue

import (
	"errors"
	"time"
)

// PushOption changes how Push and PushMany insert a job.
type PushOption func(*PushOptions)

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

// RunAfter makes the job claimable only from t on.
func RunAfter(t time.Time) PushOption { return func(o *PushOptions) { o.RunAfter = &t } }

// Delay makes the job claimable d after it is pushed, by the database clock.
func Delay(d time.Duration) PushOption { return func(o *PushOptions) { o.Delay = d } }

// PushedAt uses t instead of the database clock as the push time.
func PushedAt(t time.Time) PushOption { return func(o *PushOptions) { o.Now = &t } }

// Priority sets the job's priority; higher runs first on queues declared
// with priority: true, and is recorded but ignored elsewhere.
func Priority(p int16) PushOption { return func(o *PushOptions) { o.Priority = p } }

// MaxAttempts overrides the queue's max_attempts for this job.
func MaxAttempts(n int32) PushOption { return func(o *PushOptions) { o.MaxAttempts = n } }

// UniqueKey dedupes the job: while an unfinished job of the queue holds
// key, Push inserts nothing and reports Duplicate. Only on queues declared
// with unique: true.
func UniqueKey(key string) PushOption { return func(o *PushOptions) { o.UniqueKey = &key } }

// ErrPushManyOption is returned by PushMany for options that a bulk insert
// cannot honour: it has no ON CONFLICT (UniqueKey) and no database clock to
// add a Delay to (use RunAfter).
var ErrPushManyOption = errors.New("queue: PushMany takes RunAfter, Priority and MaxAttempts only (a bulk insert cannot dedupe or compute times; use Push for UniqueKey, and RunAfter instead of Delay)")
