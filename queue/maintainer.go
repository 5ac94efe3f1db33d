package queue

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/generated"
)

// Maintained is what a Maintainer needs of a queue: every generated
// accessor has these methods.
type Maintained interface {
	QueueName() string
	// Purge deletes up to max finished jobs past their retention.
	Purge(ctx context.Context, max int) (int64, error)
}

// reaper is the lease-mode accessor's Reap.
type reaper interface {
	Reap(ctx context.Context) (int64, error)
}

// Maintainer keeps queues tidy: it deletes finished jobs past their
// retention in bounded batches, and (lease mode) makes dead the jobs whose
// lease expired on their last attempt. Any number of processes may run
// one: a session advisory lock per queue lets one node at a time work a
// queue, and is freed if that node dies.
type Maintainer struct {
	pool     *pgxpool.Pool
	queues   []Maintained
	interval time.Duration
	batch    int
	maxPass  int
	logger   *slog.Logger
}

// MaintainerOption configures a Maintainer.
type MaintainerOption func(*Maintainer)

// MaintainEvery sets how often the Maintainer runs (default 1 minute).
func MaintainEvery(d time.Duration) MaintainerOption { return func(m *Maintainer) { m.interval = d } }

// PurgeBatch sets how many jobs one DELETE removes (default 1000) and how
// many one pass removes at most per queue (default 100 batches).
func PurgeBatch(size, batchesPerPass int) MaintainerOption {
	return func(m *Maintainer) { m.batch, m.maxPass = max(1, size), max(1, batchesPerPass) }
}

// MaintainerLogger sets the logger (default slog.Default()).
func MaintainerLogger(l *slog.Logger) MaintainerOption { return func(m *Maintainer) { m.logger = l } }

// NewMaintainer returns a maintainer of queues over pool.
func NewMaintainer(pool *pgxpool.Pool, queues []Maintained, opts ...MaintainerOption) *Maintainer {
	m := &Maintainer{pool: pool, queues: queues, interval: time.Minute, batch: 1000, maxPass: 100, logger: slog.Default()}
	for _, o := range opts {
		o(m)
	}
	return m
}

// MaintenanceReport is what one pass did to one queue.
type MaintenanceReport struct {
	Queue string
	// Skipped is true when another node held the queue's maintenance lock.
	Skipped bool
	Purged  int64
	Reaped  int64
}

// Run runs a pass every interval until ctx is cancelled.
func (m *Maintainer) Run(ctx context.Context) error {
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
	conn, err := m.pool.Acquire(ctx)
	if err != nil {
		return r, err
	}
	defer conn.Release()
	lock := generated.New(conn)
	name := "queuegen maintenance " + q.QueueName()
	locked, err := lock.TryMaintenanceLock(ctx, name)
	if err != nil {
		return r, err
	}
	if !locked {
		r.Skipped = true
		return r, nil
	}
	defer lock.MaintenanceUnlock(context.WithoutCancel(ctx), name)
	if rq, ok := q.(reaper); ok {
		if r.Reaped, err = rq.Reap(ctx); err != nil {
			return r, err
		}
	}
	for range m.maxPass {
		n, err := q.Purge(ctx, m.batch)
		r.Purged += n
		if err != nil {
			return r, err
		}
		if n < int64(m.batch) {
			break
		}
	}
	if r.Purged > 0 || r.Reaped > 0 {
		m.logger.Info("queue maintenance", "queue", r.Queue, "purged", r.Purged, "reaped", r.Reaped)
	}
	return r, nil
}
