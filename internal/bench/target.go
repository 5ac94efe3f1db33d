package bench

import (
	"context"
	"database/sql"

	"github.com/queuegen/queuegen/queue"
)

// target is the database a bench runs on, through the bench queue
// queuegen generated for its engine (package jobs for PostgreSQL, package
// myjobs for MySQL and MariaDB, package msjobs for SQL Server). The
// workloads are written once against it.
type target interface {
	// setup creates the bench's schema (PostgreSQL) or database (MySQL,
	// SQL Server) and applies the bench queue's migrations; teardown drops it.
	setup(ctx context.Context) error
	teardown()
	// pushers returns n single-job push functions, each on a connection
	// of its own (as a load generator's clients are), and a release of
	// those connections.
	pushers(ctx context.Context, n int) ([]func(ctx context.Context, n int64) error, func(), error)
	// pushMany pushes the jobs numbered from to to-1 with one PushMany.
	pushMany(ctx context.Context, from, to int64) (int64, error)
	// fill pushes n jobs quickly, untimed, and refreshes the planner's
	// statistics.
	fill(ctx context.Context, n int) error
	// worker is a worker of the bench queue whose handler calls started
	// (when not nil) and succeeds. wake picks the push-to-worker wake-up
	// the latency workload measures: LISTEN/NOTIFY on PostgreSQL, the
	// in-process wake of a push through the same accessor on MySQL and
	// SQL Server; with
	// wake false the worker polls only.
	worker(ctx context.Context, started func(), wake bool, opts ...queue.WorkerOption) (w runner, push func(ctx context.Context, n int64) error, closeFn func(), err error)
	// depth is the queue's Depth; left counts the rows of the bench
	// table.
	depth(ctx context.Context) (int64, error)
	left(ctx context.Context) (int64, error)
	// health is steady's closing line about the table: dead rows, size.
	health(ctx context.Context) (string, error)
	// keptWorker is a worker of the bench_kept queue (on_success: keep)
	// whose handler succeeds; fillKept puts finished (succeeded) jobs and
	// then queued ones into that queue, untimed, and refreshes the
	// planner's statistics.
	keptWorker(ctx context.Context, opts ...queue.WorkerOption) runner
	fillKept(ctx context.Context, finished, queued int) error
	// sizes are the bytes of the bench table (of bench_kept with kept)
	// and of its indexes.
	sizes(ctx context.Context, kept bool) (table, indexes int64, err error)
	// holdSnapshot begins a read-only transaction, on a connection of its
	// own, that holds a snapshot until release is called: the xmin
	// horizon a long report query holds on PostgreSQL, the read view
	// that holds back InnoDB's purge, a SNAPSHOT transaction that holds
	// SQL Server's row versions (version store) and ghost records.
	holdSnapshot(ctx context.Context) (release func(), err error)
	close()
}

// runner is a worker.
type runner interface{ Run(context.Context) error }

// The targets of the workloads of the queues' features (skew and spread,
// limits, rate): each engine that has the feature.
var (
	_ skewTarget   = (*pgTarget)(nil)
	_ skewTarget   = (*myTarget)(nil)
	_ skewTarget   = (*msTarget)(nil)
	_ limitsTarget = (*pgTarget)(nil)
	_ limitsTarget = (*myTarget)(nil)
	_ limitsTarget = (*msTarget)(nil)
	_ rateTarget   = (*pgTarget)(nil)
	_ rateTarget   = (*myTarget)(nil)
	_ rateTarget   = (*msTarget)(nil)
	_ target       = (*msTarget)(nil)
)

// connPushers is pushers on database/sql (MySQL, SQL Server): n push
// functions, each made by pusher on a connection of its own of db, and the
// release of those connections.
func connPushers(ctx context.Context, db *sql.DB, n int, pusher func(c *sql.Conn) func(context.Context, int64) error) ([]func(context.Context, int64) error, func(), error) {
	var conns []*sql.Conn
	release := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	push := make([]func(context.Context, int64) error, n)
	for i := range push {
		c, err := db.Conn(ctx)
		if err != nil {
			release()
			return nil, nil, err
		}
		conns = append(conns, c)
		push[i] = pusher(c)
	}
	return push, release, nil
}
