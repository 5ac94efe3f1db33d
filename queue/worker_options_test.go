package queue

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWorkerOptions: every worker option, with good values (which set the
// configuration as before) and bad ones (which give an *OptionError
// naming the option, the value and the range, and change nothing).
func TestWorkerOptions(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var l Listener = listenerFunc(func(string, chan<- struct{}) func() { return func() {} })
	cases := []struct {
		opt  WorkerOption
		want string // the error's text; "" for a good value
		ok   func(c workerConfig) bool
	}{
		{Node("pod-1"), "", func(c workerConfig) bool { return c.node == "pod-1" && c.stableNode }},
		{Node(""), `queue: Node(""): must not be empty`, nil},
		{Concurrency(1), "", func(c workerConfig) bool { return c.concurrency == 1 }},
		{Concurrency(20), "", func(c workerConfig) bool { return c.concurrency == 20 }},
		{Concurrency(0), "queue: Concurrency(0): must be at least 1", nil},
		{Concurrency(-1), "queue: Concurrency(-1): must be at least 1", nil},
		{Claimers(3), "", func(c workerConfig) bool { return c.claimers == 3 }},
		{Claimers(0), "queue: Claimers(0): must be at least 1", nil},
		{MaxClaim(1), "", func(c workerConfig) bool { return c.maxClaim == 1 }},
		{MaxClaim(-3), "queue: MaxClaim(-3): must be at least 1", nil},
		{PollInterval(time.Millisecond), "", func(c workerConfig) bool { return c.pollInterval == time.Millisecond }},
		{PollInterval(0), "queue: PollInterval(0s): must be positive", nil},
		{PollInterval(-time.Second), "queue: PollInterval(-1s): must be positive", nil},
		{LimitPollInterval(time.Second), "", func(c workerConfig) bool { return c.limitPoll == time.Second }},
		{LimitPollInterval(0), "queue: LimitPollInterval(0s): must be positive", nil},
		{FetchCooldown(0), "", func(c workerConfig) bool { return c.cooldown == 0 }},
		{FetchCooldown(-time.Millisecond), "queue: FetchCooldown(-1ms): must not be negative", nil},
		{FlushInterval(0), "", func(c workerConfig) bool { return c.flushInterval == 0 }},
		{FlushInterval(time.Second), "", func(c workerConfig) bool { return c.flushInterval == time.Second }},
		{FlushInterval(-1), "queue: FlushInterval(-1ns): must not be negative", nil},
		{FlushSize(1), "", func(c workerConfig) bool { return c.flushSize == 1 }},
		{FlushSize(0), "queue: FlushSize(0): must be at least 1", nil},
		{ShutdownTimeout(time.Second), "", func(c workerConfig) bool { return c.shutdownTimeout == time.Second }},
		{ShutdownTimeout(0), "queue: ShutdownTimeout(0s): must be positive", nil},
		{Lease(time.Millisecond), "", func(c workerConfig) bool { return c.lease == time.Millisecond }},
		{Lease(0), "queue: Lease(0s): must be at least 1ms", nil},
		{Lease(2), "queue: Lease(2ns): must be at least 1ms", nil},
		{JobTimeout(0), "", func(c workerConfig) bool { return c.jobTimeout == 0 }},
		{JobTimeout(time.Minute), "", func(c workerConfig) bool { return c.jobTimeout == time.Minute }},
		{JobTimeout(-time.Minute), "queue: JobTimeout(-1m0s): must not be negative", nil},
		{TxIsolation(Serializable), "", func(c workerConfig) bool { return c.isolation == Serializable }},
		{TxIsolation(DefaultIsolation), "", func(c workerConfig) bool { return c.isolation == DefaultIsolation }},
		{TxIsolation(Isolation(7)), "queue: TxIsolation(7): must be DefaultIsolation, ReadCommitted, RepeatableRead or Serializable", nil},
		{TxIsolation(Isolation(-1)), "queue: TxIsolation(-1): must be DefaultIsolation, ReadCommitted, RepeatableRead or Serializable", nil},
		{StatsInterval(time.Second), "", func(c workerConfig) bool { return c.statsInterval == time.Second }},
		{StatsInterval(0), "queue: StatsInterval(0s): must be positive", nil},
		{NodeHeartbeat(2 * time.Second), "", func(c workerConfig) bool { return c.nodeHeartbeat == 2*time.Second }},
		{NodeHeartbeat(0), "queue: NodeHeartbeat(0s): must be positive", nil},
		{NodeHeartbeat(-time.Second), "queue: NodeHeartbeat(-1s): must be positive", nil},
		{Logger(quiet), "", func(c workerConfig) bool { return c.logger == quiet }},
		{Logger(nil), "queue: Logger(nil): must not be nil (omit the option for slog.Default())", nil},
		{WithHooks(Hooks{Batch: func(string, string, int) {}}), "", func(c workerConfig) bool { return c.hooks.Batch != nil }},
		{WithListener(l), "", func(c workerConfig) bool { return c.listener != nil }},
		{WithListener(nil), "", func(c workerConfig) bool { return c.listener == nil }},
		{nil, "queue: WorkerOption(nil): must not be nil", nil},
	}
	defaults, err := newWorkerConfig(nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		// A bad option after a good one: the good one applies, the bad
		// one changes nothing.
		got, err := newWorkerConfig([]WorkerOption{c.opt}, 7)
		if c.want == "" {
			if err != nil || !c.ok(got) {
				t.Errorf("good option %s: err %v, config %+v", c.want, err, got)
			}
			continue
		}
		var oe *OptionError
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrOption) || !errors.As(err, &oe) {
			t.Errorf("bad option: err %v, want %q wrapping ErrOption", err, c.want)
			continue
		}
		if !strings.HasPrefix(c.want, "queue: "+oe.Option+"(") {
			t.Errorf("OptionError.Option = %q for %q", oe.Option, c.want)
		}
		got.node, defaults.node = "", "" // the default node names the process
		if got.logger != defaults.logger || got.concurrency != defaults.concurrency || got.lease != defaults.lease ||
			got.statsInterval != defaults.statsInterval || got.pollInterval != defaults.pollInterval || got.claimers != defaults.claimers {
			t.Errorf("%s changed the configuration: %+v", c.want, got)
		}
	}
	// The first bad option is the one reported.
	if _, err := newWorkerConfig([]WorkerOption{Concurrency(2), FlushSize(0), StatsInterval(0)}, 7); err == nil || !strings.Contains(err.Error(), "FlushSize(0)") {
		t.Errorf("two bad options: %v, want the first's", err)
	}
	// The defaults are as before.
	if d := defaults; d.concurrency != 7 || d.claimers != 2 || d.maxClaim != 500 || d.pollInterval != time.Second ||
		d.limitPoll != 25*time.Millisecond || d.cooldown != 10*time.Millisecond || d.flushInterval != 5*time.Millisecond ||
		d.flushSize != 500 || d.shutdownTimeout != 30*time.Second || d.statsInterval != 10*time.Second || d.lease != 0 ||
		d.jobTimeout != 0 || d.logger != slog.Default() {
		t.Errorf("defaults changed: %+v", d)
	}
}

// within is untouched with ResultsWithin.
type within struct {
	untouched[struct{}]
	d time.Duration
}

func (u *within) ResultsWithin() time.Duration { return u.d }

// TestResultsWithin: a worker of a queue whose accessor says
// ResultsWithin (those with concurrency limits) writes its results within
// that, unless FlushInterval is given; other queues keep the default 5 ms.
// Ignoring the accessor would fail it; so would overriding a FlushInterval
// the caller gave.
func TestResultsWithin(t *testing.T) {
	h := func(context.Context, *Job[int]) error { return nil }
	for _, c := range []struct {
		name   string
		q      LeaseQueue[int]
		opts   []WorkerOption
		expect time.Duration
	}{
		{"at once", &within{}, nil, 0},
		{"within 1ms", &within{d: time.Millisecond}, nil, time.Millisecond},
		{"at once, FlushInterval given", &within{}, []WorkerOption{FlushInterval(2 * time.Millisecond)}, 2 * time.Millisecond},
		{"no such method", &untouched[struct{}]{}, nil, 5 * time.Millisecond},
	} {
		if got := NewWorker(c.q, h, c.opts...).cfg.flushInterval; got != c.expect {
			t.Errorf("%s: flush interval %v, want %v", c.name, got, c.expect)
		}
	}
}

type listenerFunc func(string, chan<- struct{}) func()

func (f listenerFunc) Subscribe(ch string, wake chan<- struct{}) func() { return f(ch, wake) }

// untouched is a queue whose every database method counts its calls: a
// worker with a bad option must call none.
type untouched[Tx any] struct{ calls atomic.Int32 }

func (u *untouched[Tx]) touch()                         { u.calls.Add(1) }
func (u *untouched[Tx]) QueueName() string              { return "email" }
func (u *untouched[Tx]) LeaseDuration() time.Duration   { return time.Minute }
func (u *untouched[Tx]) NotifyChannel() string          { return "" }
func (u *untouched[Tx]) RetryDelay(int32) time.Duration { return time.Second }
func (u *untouched[Tx]) Claim(context.Context, string, int, ...ClaimOption) ([]*Job[int], error) {
	u.touch()
	return nil, nil
}
func (u *untouched[Tx]) CompleteMany(context.Context, []*Job[int]) (int64, error) {
	u.touch()
	return 0, nil
}
func (u *untouched[Tx]) FailManyAfter(context.Context, []*Job[int], []error, []time.Duration) (map[int64]State, error) {
	u.touch()
	return nil, nil
}
func (u *untouched[Tx]) FailManyAt(context.Context, []*Job[int], []error, []time.Time) (map[int64]State, error) {
	u.touch()
	return nil, nil
}
func (u *untouched[Tx]) SnoozeFor(context.Context, *Job[int], time.Duration) error {
	u.touch()
	return nil
}
func (u *untouched[Tx]) Discard(context.Context, *Job[int], error) error { u.touch(); return nil }
func (u *untouched[Tx]) ExtendMany(context.Context, []*Job[int], time.Duration) ([]int64, error) {
	u.touch()
	return nil, nil
}
func (u *untouched[Tx]) Release(context.Context, *Job[int]) error { u.touch(); return nil }
func (u *untouched[Tx]) ReleaseNode(context.Context, string) (int64, error) {
	u.touch()
	return 0, nil
}
func (u *untouched[Tx]) Paused(context.Context) (bool, error) { u.touch(); return false, nil }
func (u *untouched[Tx]) Depth(context.Context) (int64, error) { u.touch(); return 0, nil }

// TestBadWorkerOptionRunsNothing: Run of a worker (either mode) given a
// bad option returns its error at once, the queue named, and calls no
// method of the queue; StatsInterval(0) with a Depth hook used to panic in
// time.NewTicker, inside Run's goroutine.
func TestBadWorkerOptionRunsNothing(t *testing.T) {
	depth := WithHooks(Hooks{Depth: func(string, int64) {}})
	for _, opts := range [][]WorkerOption{
		{depth, StatsInterval(0)},
		{Node("stable"), Concurrency(0)},
		{Lease(0)},
		{Logger(nil)},
		{PollInterval(-time.Second)},
	} {
		q := &untouched[struct{}]{}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		start := time.Now()
		err := NewWorker(q, func(context.Context, *Job[int]) error { return nil }, opts...).Run(ctx)
		timedOut := ctx.Err() != nil
		cancel()
		if !errors.Is(err, ErrOption) || !strings.HasPrefix(err.Error(), "queue email: queue: ") || timedOut {
			t.Errorf("lease worker Run = %v, want the option's error at once", err)
		}
		if n := q.calls.Load(); n != 0 {
			t.Errorf("lease worker with a bad option called the queue %d times", n)
		}
		txq := &untouchedTx{}
		err = NewTxWorker[int, struct{}](noDriver{t}, txq, func(context.Context, struct{}, *Job[int]) error { return nil }, opts...).Run(context.Background())
		if !errors.Is(err, ErrOption) || !strings.HasPrefix(err.Error(), "queue email: queue: ") {
			t.Errorf("transaction-mode worker Run = %v, want the option's error", err)
		}
		if n := txq.calls.Load(); n != 0 {
			t.Errorf("transaction-mode worker with a bad option called the queue %d times", n)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("Run took %s to refuse", d)
		}
	}
}

// untouchedTx is untouched for a transaction-mode worker.
type untouchedTx struct{ calls atomic.Int32 }

func (u *untouchedTx) QueueName() string              { return "email" }
func (u *untouchedTx) NotifyChannel() string          { return "" }
func (u *untouchedTx) RetryDelay(int32) time.Duration { return time.Second }
func (u *untouchedTx) Claim(context.Context, struct{}, int, ...ClaimOption) ([]*Job[int], error) {
	u.calls.Add(1)
	return nil, nil
}
func (u *untouchedTx) Complete(context.Context, struct{}, *Job[int]) error {
	u.calls.Add(1)
	return nil
}
func (u *untouchedTx) FailManyAfter(context.Context, struct{}, []*Job[int], []error, []time.Duration) (map[int64]State, error) {
	u.calls.Add(1)
	return nil, nil
}
func (u *untouchedTx) FailManyAt(context.Context, struct{}, []*Job[int], []error, []time.Time) (map[int64]State, error) {
	u.calls.Add(1)
	return nil, nil
}
func (u *untouchedTx) SnoozeFor(context.Context, struct{}, *Job[int], time.Duration) error {
	u.calls.Add(1)
	return nil
}
func (u *untouchedTx) Discard(context.Context, struct{}, *Job[int], error) error {
	u.calls.Add(1)
	return nil
}
func (u *untouchedTx) Paused(context.Context) (bool, error) { u.calls.Add(1); return false, nil }
func (u *untouchedTx) Depth(context.Context) (int64, error) { u.calls.Add(1); return 0, nil }

// noDriver fails the test if a transaction is begun.
type noDriver struct{ t *testing.T }

func (d noDriver) Begin(context.Context, Isolation) (struct{}, error) {
	d.t.Error("a transaction was begun")
	return struct{}{}, errors.New("no")
}
func (d noDriver) Commit(context.Context, struct{}) error   { return nil }
func (d noDriver) Rollback(context.Context, struct{}) error { return nil }
func (d noDriver) Savepoint(context.Context, struct{}) (struct{}, func(context.Context) error, func(context.Context) error, error) {
	d.t.Error("a savepoint was begun")
	return struct{}{}, nil, nil, errors.New("no")
}
func (d noDriver) Retryable(error) bool { return false }

// TestMaintainerOptions: a bad maintainer option is an *OptionError that
// Run and RunOnce return before touching a queue.
func TestMaintainerOptions(t *testing.T) {
	cases := []struct {
		opt  MaintainerOption
		want string
	}{
		{MaintainEvery(time.Second), ""},
		{MaintainEvery(0), "queue: MaintainEvery(0s): must be positive"},
		{PurgeBatch(10, 1), ""},
		{PurgeBatch(0, 5), "queue: PurgeBatch(0, 5): both must be at least 1"},
		{PurgeBatch(5, -1), "queue: PurgeBatch(5, -1): both must be at least 1"},
		{MaintainerLogger(slog.Default()), ""},
		{MaintainerLogger(nil), "queue: MaintainerLogger(nil): must not be nil (omit the option for slog.Default())"},
		{nil, "queue: MaintainerOption(nil): must not be nil"},
	}
	for _, c := range cases {
		q := &untouched[struct{}]{}
		m := NewMaintainer([]Maintained{q}, c.opt)
		_, err := m.RunOnce(context.Background())
		if c.want == "" {
			if err != nil {
				t.Errorf("good option: %v", err)
			}
			continue
		}
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrOption) {
			t.Errorf("RunOnce = %v, want %q", err, c.want)
		}
		if err := m.Run(context.Background()); err == nil || err.Error() != c.want {
			t.Errorf("Run = %v, want %q", err, c.want)
		}
		if n := q.calls.Load(); n != 0 {
			t.Errorf("%s: the queue was called %d times", c.want, n)
		}
	}
}

// TestPushAndClaimOptions: every push and claim option, good and bad.
func TestPushAndClaimOptions(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	push := []struct {
		opt  PushOption
		want string
	}{
		{RunAfter(at), ""},
		{RunAfter(time.Time{}), "queue: RunAfter(0001-01-01T00:00:00Z): must not be the zero time"},
		{Delay(0), ""},
		{Delay(time.Hour), ""},
		{Delay(-time.Second), "queue: Delay(-1s): must not be negative"},
		{PushedAt(at), ""},
		{PushedAt(time.Time{}), "queue: PushedAt(0001-01-01T00:00:00Z): must not be the zero time"},
		{Priority(-32768), ""},
		{Priority(32767), ""},
		{MaxAttempts(1), ""},
		{MaxAttempts(0), "queue: MaxAttempts(0): must be at least 1 (omit the option for the queue's max_attempts)"},
		{MaxAttempts(-2), "queue: MaxAttempts(-2): must be at least 1 (omit the option for the queue's max_attempts)"},
		{UniqueKey("k"), ""},
		{UniqueKey(""), `queue: UniqueKey(""): must not be empty`},
		{nil, "queue: PushOption(nil): must not be nil"},
	}
	for _, c := range push {
		o := PushOptions{MaxAttempts: 25}
		err := ApplyPushOptions(&o, []PushOption{c.opt})
		if c.want == "" {
			if err != nil {
				t.Errorf("good push option: %v", err)
			}
			continue
		}
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrOption) {
			t.Errorf("push option: %v, want %q", err, c.want)
		}
		if o != (PushOptions{MaxAttempts: 25}) {
			t.Errorf("%s changed the options: %+v", c.want, o)
		}
	}
	claim := []struct {
		opt  ClaimOption
		want string
	}{
		{ClaimAt(at), ""},
		{ClaimAt(time.Time{}), "queue: ClaimAt(0001-01-01T00:00:00Z): must not be the zero time"},
		{LeaseFor(time.Millisecond), ""},
		{LeaseFor(0), "queue: LeaseFor(0s): must be at least 1ms"},
		{LeaseFor(-time.Minute), "queue: LeaseFor(-1m0s): must be at least 1ms"},
		{nil, "queue: ClaimOption(nil): must not be nil"},
	}
	for _, c := range claim {
		o := ClaimOptions{Lease: time.Minute}
		err := ApplyClaimOptions(&o, []ClaimOption{c.opt})
		if c.want == "" {
			if err != nil {
				t.Errorf("good claim option: %v", err)
			}
			continue
		}
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrOption) {
			t.Errorf("claim option: %v, want %q", err, c.want)
		}
		if o != (ClaimOptions{Lease: time.Minute}) {
			t.Errorf("%s changed the options: %+v", c.want, o)
		}
	}
}
