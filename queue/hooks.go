package queue

import (
	"context"
	"time"
)

// JobInfo identifies a job in hooks, without its payload.
type JobInfo struct {
	// Queue is the job's queue.
	Queue string
	// ID is the job's id.
	ID int64
	// Attempt is the attempt being worked (1 for the first).
	Attempt int32
	// MaxAttempts is how many attempts the job may use.
	MaxAttempts int32
}

// Hooks are called by a Worker as it works, for metrics and tracing: wire
// them to Prometheus, OpenTelemetry or anything else (see
// examples/mailer). Every field is optional. Hooks run on the worker's
// goroutines, so they must be quick and safe for concurrent use.
type Hooks struct {
	// JobStarted is called before the handler runs. The context it
	// returns is the handler's (to carry a span, say); return ctx itself
	// when there is nothing to add.
	JobStarted func(ctx context.Context, job JobInfo) context.Context
	// JobFinished is called after the handler returns, with its error.
	JobFinished func(ctx context.Context, job JobInfo, outcome Outcome, took time.Duration, err error)
	// Batch is called for every statement that claims or records jobs,
	// with its kind and the number of jobs in it: "claim", "complete",
	// "fail", "snooze", "discard", "release" and "extend" (the heartbeat)
	// from a lease worker; "claim", "complete" and "fail" (snoozes and
	// discards included) from a transaction-mode worker.
	Batch func(queue string, kind string, size int)
	// Depth is called every StatsInterval with the number of jobs due, by
	// workers of either mode.
	Depth func(queue string, due int64)
}
