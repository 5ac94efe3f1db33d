package queue

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Maintained is a queue a Maintainer looks after: any generated accessor.
// A Maintainer purges the queues that have a Purge method (those whose spec
// sets a retention), reaps those that have a Reap method (lease mode), and
// deletes the rows of nodes silent past ForgetNodesAfter of those that have
// a ForgetStaleNodes method (every accessor generated since the nodes
// table).
type Maintained interface {
	QueueName() string
}

// purger is the accessor's Purge, generated where the spec sets a
// retention: it deletes up to max finished jobs past it.
type purger interface {
	Purge(ctx context.Context, max int) (int64, error)
}

// reaper is the lease-mode accessor's Reap: it makes dead up to max jobs
// whose lease expired on their last attempt.
type reaper interface {
	Reap(ctx context.Context, max int) (int64, error)
}

// nodeForgetter is the accessor's ForgetStaleNodes, which accessors
// generated since the nodes table have: it deletes the rows of nodes
// whose last heartbeat is older than d.
type nodeForgetter interface {
	ForgetStaleNodes(ctx context.Context, d time.Duration) (int64, error)
}

// Maintainer keeps queues tidy: it deletes finished jobs past their
// retention in bounded batches, and (lease mode) makes dead the jobs whose
// lease expired on their last attempt. Any number of processes may run
// one: each batch statement first takes the queue's maintenance lock for
// its own transaction, so while one node's batch runs, another's finds
// nothing to do; no lock outlives a statement, so it works behind a
// transaction-mode pooler too.
type Maintainer struct {
	queues   []Maintained
	interval time.Duration
	batch    int
	maxPass  int
	forget   time.Duration
	logger   *slog.Logger
	bad      error // the first bad option: Run and RunOnce return it
}

// MaintainerOption configures a Maintainer. An option given a value out of
// its range makes Run and RunOnce return an *OptionError, running nothing.
type MaintainerOption interface {
	applyMaintainer(*Maintainer) error
}

type maintainerOption func(*Maintainer) error

func (f maintainerOption) applyMaintainer(m *Maintainer) error { return f(m) }

// MaintainEvery sets how often the Maintainer runs (default 1 minute); it
// must be positive.
func MaintainEvery(d time.Duration) MaintainerOption {
	return maintainerOption(func(m *Maintainer) error {
		if err := positive("MaintainEvery", d); err != nil {
			return err
		}
		m.interval = d
		return nil
	})
}

// PurgeBatch sets how many jobs one purge or reap statement changes
// (default 1000) and how many batches one pass runs at most per queue
// (default 100); both must be at least 1.
func PurgeBatch(size, batchesPerPass int) MaintainerOption {
	return maintainerOption(func(m *Maintainer) error {
		if size < 1 || batchesPerPass < 1 {
			return badOption("PurgeBatch", optionArgs(fmt.Sprintf("%d, %d", size, batchesPerPass)), "both must be at least 1")
		}
		m.batch, m.maxPass = size, batchesPerPass
		return nil
	})
}

// ForgetNodesAfter sets how long after its last heartbeat a node's row is
// deleted from queuegen's nodes table (default 1 hour): a node killed
// without stopping gracefully shows as stale on the dashboard and in
// `queuegen nodes`, with its leases, until then. It must be positive.
func ForgetNodesAfter(d time.Duration) MaintainerOption {
	return maintainerOption(func(m *Maintainer) error {
		if err := positive("ForgetNodesAfter", d); err != nil {
			return err
		}
		m.forget = d
		return nil
	})
}

// MaintainerLogger sets the logger (default slog.Default()); it must not
// be nil.
func MaintainerLogger(l *slog.Logger) MaintainerOption {
	return maintainerOption(func(m *Maintainer) error {
		if l == nil {
			return badOption("MaintainerLogger", l, "must not be nil (omit the option for slog.Default())")
		}
		m.logger = l
		return nil
	})
}

// NewMaintainer returns a maintainer of queues (generated accessors).
func NewMaintainer(queues []Maintained, opts ...MaintainerOption) *Maintainer {
	m := &Maintainer{queues: queues, interval: time.Minute, batch: 1000, maxPass: 100, forget: time.Hour, logger: slog.Default()}
	for _, o := range opts {
		if o == nil {
			m.bad = badOption("MaintainerOption", nil, "must not be nil")
			break
		}
		if m.bad = o.applyMaintainer(m); m.bad != nil {
			break
		}
	}
	return m
}

// MaintenanceReport is what one pass did to one queue.
type MaintenanceReport struct {
	// Queue is the queue maintained.
	Queue string
	// Purged is how many finished jobs past retention were deleted.
	Purged int64
	// Reaped is how many jobs whose lease expired on their last attempt
	// were made dead.
	Reaped int64
	// ForgottenNodes is how many rows of nodes silent past
	// ForgetNodesAfter were deleted.
	ForgottenNodes int64
}

// Run runs a pass every interval until ctx is cancelled.
// A bad option is returned at once.
func (m *Maintainer) Run(ctx context.Context) error {
	if m.bad != nil {
		return m.bad
	}
	for {
		if _, err := m.RunOnce(ctx); err != nil && ctx.Err() == nil {
			m.logger.Warn("queue maintenance failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(m.interval):
		}
	}
}

// RunOnce runs one pass over every queue.
func (m *Maintainer) RunOnce(ctx context.Context) ([]MaintenanceReport, error) {
	if m.bad != nil {
		return nil, m.bad
	}
	var reports []MaintenanceReport
	for _, q := range m.queues {
		r, err := m.maintain(ctx, q)
		if err != nil {
			return reports, err
		}
		reports = append(reports, r)
	}
	return reports, nil
}

func (m *Maintainer) maintain(ctx context.Context, q Maintained) (MaintenanceReport, error) {
	r := MaintenanceReport{Queue: q.QueueName()}
	var err error
	if rq, ok := q.(reaper); ok {
		if r.Reaped, err = m.batches(ctx, rq.Reap); err != nil {
			return r, err
		}
	}
	if pq, ok := q.(purger); ok {
		if r.Purged, err = m.batches(ctx, pq.Purge); err != nil {
			return r, err
		}
	}
	if fq, ok := q.(nodeForgetter); ok {
		if r.ForgottenNodes, err = fq.ForgetStaleNodes(ctx, m.forget); err != nil {
			return r, err
		}
	}
	if r.Purged > 0 || r.Reaped > 0 || r.ForgottenNodes > 0 {
		m.logger.Info("queue maintenance", "queue", r.Queue, "purged", r.Purged, "reaped", r.Reaped, "forgotten_nodes", r.ForgottenNodes)
	}
	return r, nil
}

// batches runs a bounded statement until it changes fewer rows than a
// batch (none, when another node holds the queue's maintenance lock), or
// maxPass times.
func (m *Maintainer) batches(ctx context.Context, stmt func(context.Context, int) (int64, error)) (int64, error) {
	var total int64
	for range m.maxPass {
		n, err := stmt(ctx, m.batch)
		total += n
		if err != nil || n < int64(m.batch) {
			return total, err
		}
	}
	return total, nil
}
