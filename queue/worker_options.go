package queue

import (
	"fmt"
	"log/slog"
	"os"
	"time"
)

// WorkerOption configures a Worker or a TxWorker. An option given a value
// outside its range (Concurrency(0), StatsInterval(0), a nil Logger) is
// not clamped or ignored: the worker's Run returns an *OptionError naming
// the option, the value and what it accepts, before any statement.
type WorkerOption interface {
	applyWorker(*workerConfig) error
}

type workerOption func(*workerConfig) error

func (f workerOption) applyWorker(c *workerConfig) error { return f(c) }

type workerConfig struct {
	node            string
	stableNode      bool
	concurrency     int
	claimers        int
	maxClaim        int
	pollInterval    time.Duration
	limitPoll       time.Duration
	cooldown        time.Duration
	pauseInterval   time.Duration
	flushInterval   time.Duration
	flushSet        bool // FlushInterval was given
	flushSize       int
	shutdownTimeout time.Duration
	lease           time.Duration
	jobTimeout      time.Duration
	isolation       Isolation
	statsInterval   time.Duration
	nodeHeartbeat   time.Duration
	logger          *slog.Logger
	hooks           Hooks
	listener        Listener
}

// Default concurrencies, by worker kind.
const (
	defaultLeaseConcurrency = 100
	defaultTxConcurrency    = 10
)

// newWorkerConfig applies opts over the defaults. A bad option changes
// nothing, and the first one's error is returned (with the defaults and
// the options before it) for Run to return.
func newWorkerConfig(opts []WorkerOption, concurrency int) (workerConfig, error) {
	host, _ := os.Hostname()
	c := workerConfig{
		node:            fmt.Sprintf("%s-%d", host, os.Getpid()),
		concurrency:     0, // NewWorker and NewTxWorker choose
		claimers:        2,
		maxClaim:        500,
		pollInterval:    time.Second,
		limitPoll:       25 * time.Millisecond,
		cooldown:        10 * time.Millisecond,
		pauseInterval:   time.Second,
		flushInterval:   5 * time.Millisecond,
		flushSize:       500,
		shutdownTimeout: 30 * time.Second,
		statsInterval:   10 * time.Second,
		nodeHeartbeat:   defaultNodeHeartbeat,
		logger:          slog.Default(),
	}
	var err error
	for _, o := range opts {
		if o == nil {
			err = &OptionError{Option: "WorkerOption", Value: nil, Want: "must not be nil"}
			break
		}
		if err = o.applyWorker(&c); err != nil {
			break
		}
	}
	if c.concurrency == 0 {
		c.concurrency = concurrency
	}
	return c, err
}

// Node names this worker process in the leases it takes (the lock key of
// the lease design: which node holds a job). Give a name that stays the same across restarts (a pod or host
// name) and the worker releases, on start, the jobs a previous run of the
// same node left claimed. The default, host name and process id, is new
// on every start: a crashed run's jobs then come back when their leases
// expire.
func Node(id string) WorkerOption {
	return workerOption(func(c *workerConfig) error {
		if id == "" {
			return badOption("Node", id, "must not be empty")
		}
		c.node, c.stableNode = id, true
		return nil
	})
}

// Concurrency is how many handlers run at once: default 100 for a lease
// worker (handlers hold no connection; a claim takes up to MaxClaim jobs
// at a time, and a worker whose handlers are quick holds jobs ahead of
// them, up to Claimers × MaxClaim, as many as they finish in two claims'
// time), 10 for a transaction-mode worker (each running job holds a
// connection of the pool, its transaction: keep it within the pool's size).
func Concurrency(n int) WorkerOption {
	return workerOption(func(c *workerConfig) error {
		if err := atLeastOne("Concurrency", n); err != nil {
			return err
		}
		c.concurrency = n
		return nil
	})
}

// Claimers is how many claim loops a worker runs at once (default 2).
// Each claims for the free capacity it finds; two keep a busy worker fed
// while one claim is in flight, which matters when handlers are short
// (each loop polls an idle queue every PollInterval). A worker whose
// handlers are quick holds jobs ahead of them, so its claims are full
// under a backlog; with slow handlers a claim takes the handlers free.
func Claimers(n int) WorkerOption {
	return workerOption(func(c *workerConfig) error {
		if err := atLeastOne("Claimers", n); err != nil {
			return err
		}
		c.claimers = n
		return nil
	})
}

// MaxClaim caps how many jobs one claim takes (default 500); a claim takes
// at most the free capacity: the handlers free, and the jobs the worker
// may hold ahead of them.
func MaxClaim(n int) WorkerOption {
	return workerOption(func(c *workerConfig) error {
		if err := atLeastOne("MaxClaim", n); err != nil {
			return err
		}
		c.maxClaim = n
		return nil
	})
}

// PollInterval is how often an idle worker looks for due jobs (default
// 1s). With a Listener, pushes wake it at once and polling only finds
// scheduled and retried jobs.
func PollInterval(d time.Duration) WorkerOption {
	return durationOption("PollInterval", positive, d, func(c *workerConfig) { c.pollInterval = d })
}

// LimitPollInterval is how often a worker of a queue with limits claims
// again while its claims come back short and due jobs wait (default
// 25ms): the limits held them back, and slots free up on other nodes
// without notice. Never longer than PollInterval.
func LimitPollInterval(d time.Duration) WorkerOption {
	return durationOption("LimitPollInterval", positive, d, func(c *workerConfig) { c.limitPoll = d })
}

// FetchCooldown is how long a worker waits before claiming again after a
// claim that found some jobs but fewer than it asked for (default 10ms):
// jobs are still arriving, so it looks again soon, without spinning. Only
// a claim that finds nothing waits PollInterval.
func FetchCooldown(d time.Duration) WorkerOption {
	return durationOption("FetchCooldown", notNegative, d, func(c *workerConfig) { c.cooldown = d })
}

// FlushInterval bounds how long a finished job waits to be completed or
// failed in a batch (default 5ms; for a queue with concurrency limits,
// its accessor's ResultsWithin: 0 on PostgreSQL, 1ms on MySQL). 0 writes results as soon as they arrive, those that arrive
// while a write is under way in the next one. Results are written sooner
// once none of the worker's handlers is running: no other result would
// join them.
func FlushInterval(d time.Duration) WorkerOption {
	return durationOption("FlushInterval", notNegative, d, func(c *workerConfig) { c.flushInterval, c.flushSet = d, true })
}

// FlushSize is the most jobs one complete or fail statement holds (default
// 500).
func FlushSize(n int) WorkerOption {
	return workerOption(func(c *workerConfig) error {
		if err := atLeastOne("FlushSize", n); err != nil {
			return err
		}
		c.flushSize = n
		return nil
	})
}

// ShutdownTimeout bounds Run's shutdown after its context is cancelled
// (default 30s). A lease worker lets running handlers finish for three
// quarters of it, heartbeating their leases, then cancels their contexts
// and releases the jobs still unfinished, and writes the pending results in
// the rest. A transaction-mode worker lets them finish for three quarters
// of it too, then cancels them (their transactions roll back), and returns
// at the timeout even if some ignore their cancellation.
func ShutdownTimeout(d time.Duration) WorkerOption {
	return durationOption("ShutdownTimeout", positive, d, func(c *workerConfig) { c.shutdownTimeout = d })
}

// Lease overrides the queue's lease for the jobs this worker claims.
// It must be at least a millisecond (the heartbeat runs every third of it);
// without the option the worker uses the queue's.
func Lease(d time.Duration) WorkerOption {
	return workerOption(func(c *workerConfig) error {
		if d < time.Millisecond {
			return badOption("Lease", d, "must be at least 1ms")
		}
		c.lease = d
		return nil
	})
}

// JobTimeout bounds how long a handler may run (default: no bound but
// the lease, which the heartbeat keeps extending). The handler's context
// is cancelled at the deadline; when the handler then returns, the attempt
// fails with a TimeoutError. A handler that ignores its context keeps its
// slot until it returns. Both modes: in transaction mode the failure is
// recorded in the job's transaction, unless a statement the handler was
// running when cut off broke it (then the job returns, unrecorded).
// JobTimeout(0) is the default: no bound.
func JobTimeout(d time.Duration) WorkerOption {
	return durationOption("JobTimeout", notNegative, d, func(c *workerConfig) { c.jobTimeout = d })
}

// TxIsolation sets the isolation level of a TxWorker's transactions
// (default: the database's). Serialization failures and deadlocks roll the
// transaction back, and the job is claimed again without using an attempt.
func TxIsolation(level Isolation) WorkerOption {
	return workerOption(func(c *workerConfig) error {
		if level < DefaultIsolation || level > Serializable {
			return badOption("TxIsolation", int(level), "must be DefaultIsolation, ReadCommitted, RepeatableRead or Serializable")
		}
		c.isolation = level
		return nil
	})
}

// StatsInterval is how often Hooks.Depth is fed (default 10s).
func StatsInterval(d time.Duration) WorkerOption {
	return durationOption("StatsInterval", positive, d, func(c *workerConfig) { c.statsInterval = d })
}

// NodeHeartbeat is how often the worker records its node in queuegen's
// nodes table (default 5s): its node id, concurrency, running handlers,
// host and process, and a heartbeat time from the database's clock. A node
// whose last heartbeat is three intervals old is shown as stale by the
// dashboard and `queuegen nodes`, with the leases it still holds. A failed
// heartbeat is logged and tried again at the next; it never stops the
// worker. It must be positive.
func NodeHeartbeat(d time.Duration) WorkerOption {
	return durationOption("NodeHeartbeat", positive, d, func(c *workerConfig) { c.nodeHeartbeat = d })
}

// Logger sets the worker's logger (default slog.Default()).
func Logger(l *slog.Logger) WorkerOption {
	return workerOption(func(c *workerConfig) error {
		if l == nil {
			return badOption("Logger", l, "must not be nil (omit the option for slog.Default())")
		}
		c.logger = l
		return nil
	})
}

// WithHooks sets the worker's hooks.
func WithHooks(h Hooks) WorkerOption {
	return workerOption(func(c *workerConfig) error { c.hooks = h; return nil })
}

// Listener wakes workers when jobs are pushed to queues declared with
// notify: true. On PostgreSQL it is a *queuepgx.Listener (package
// github.com/queuegen/queuegen/queue/queuepgx), one per process, whose
// connection LISTENs for the notifications the pushes send.
type Listener interface {
	// Subscribe makes a notification on channel do a non-blocking send
	// on wake. It returns the function that unsubscribes.
	Subscribe(channel string, wake chan<- struct{}) (unsubscribe func())
}

// WithListener wakes the worker when jobs are pushed (queues declared with
// notify: true), instead of waiting for the next poll. A nil Listener is
// none: the worker polls.
func WithListener(l Listener) WorkerOption {
	return workerOption(func(c *workerConfig) error { c.listener = l; return nil })
}

// durationOption sets a duration that check accepts.
func durationOption(name string, check func(string, time.Duration) error, d time.Duration, set func(*workerConfig)) WorkerOption {
	return workerOption(func(c *workerConfig) error {
		if err := check(name, d); err != nil {
			return err
		}
		set(c)
		return nil
	})
}
