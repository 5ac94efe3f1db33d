package e2e_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/e2e/jobs"
	"github.com/queuegen/queuegen/internal/e2e/mysql/myjobs"
	"github.com/queuegen/queuegen/internal/e2e/payload"
	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/queue"
	"github.com/queuegen/queuegen/queue/queueimpl"
)

// The suites of this file's kind run once per engine: each test calls
// eachEngine (or eachTx, for transaction mode) and gets, per engine, a
// fresh migrated database and the generated accessors of the queues both
// specs declare alike (task, kept, nowait, txtask), whose payload is one Go
// type, payload.Task.

// leaseQueue is what the suites use of a lease-mode queue: either
// engine's generated accessor of task, kept or nowait.
type leaseQueue interface {
	queue.LeaseQueue[payload.Task]
	Push(ctx context.Context, p payload.Task, opts ...queue.PushOption) (queue.PushResult, error)
	PushMany(ctx context.Context, ps []payload.Task, opts ...queue.PushOption) (int64, error)
	Claim(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]*queue.Job[payload.Task], error)
	Complete(ctx context.Context, job *queue.Job[payload.Task]) error
	Fail(ctx context.Context, job *queue.Job[payload.Task], cause error) (queue.State, error)
	FailMany(ctx context.Context, jobs []*queue.Job[payload.Task], causes []error) (map[int64]queue.State, error)
	Snooze(ctx context.Context, job *queue.Job[payload.Task], at time.Time) error
	Get(ctx context.Context, id int64) (*queue.Job[payload.Task], error)
	Reap(ctx context.Context, max int) (int64, error)
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	Worker(handler queue.Handler[payload.Task], opts ...queue.WorkerOption) *queue.Worker[payload.Task]
}

// purgingQueue is a queue with retention (kept).
type purgingQueue interface {
	leaseQueue
	Purge(ctx context.Context, max int) (int64, error)
}

// periodicQueue is a queue with periodic jobs (task, txtask).
type periodicQueue interface {
	queue.Maintained
	PeriodicJobs() []queue.PeriodicJob
}

// engine is one engine's fresh database and accessors.
type engine struct {
	// name is the engine's spec name.
	name string
	// db is the database, migrated; sql runs raw statements on it.
	db *dbtest.DB
	// task: priority, unique keys, max 3 attempts, backoff 1s×2, periodic;
	// kept: on_success keep with retention; nowait: lock nowait.
	task   leaseQueue
	kept   purgingQueue
	nowait leaseQueue
	// periodic are task and txtask, as a Scheduler takes them.
	periodic []periodicQueue
	// noRows is the error Get returns for a job that is gone.
	noRows error
	// pg and my are the transaction-mode queue txtask, one set.
	pg *txEngine[pgx.Tx]
	my *txEngine[*sql.Tx]
}

// txQueue is what the suites use of the transaction-mode queue txtask,
// whose transactions are Tx.
type txQueue[Tx any] interface {
	queue.TxQueue[payload.Task, Tx]
	Push(ctx context.Context, p payload.Task, opts ...queue.PushOption) (queue.PushResult, error)
	PushMany(ctx context.Context, ps []payload.Task, opts ...queue.PushOption) (int64, error)
	CompleteMany(ctx context.Context, tx Tx, jobs []*queue.Job[payload.Task]) (int64, error)
	FailMany(ctx context.Context, tx Tx, jobs []*queue.Job[payload.Task], causes []error) (map[int64]queue.State, error)
	Fail(ctx context.Context, tx Tx, job *queue.Job[payload.Task], cause error) (queue.State, error)
	Snooze(ctx context.Context, tx Tx, job *queue.Job[payload.Task], at time.Time) error
	Get(ctx context.Context, id int64) (*queue.Job[payload.Task], error)
	Worker(handler queue.TxHandler[payload.Task, Tx], opts ...queue.WorkerOption) *queue.TxWorker[payload.Task, Tx]
}

// txEngine is an engine's transaction-mode queue with what the suites
// need of its driver.
type txEngine[Tx any] struct {
	q txQueue[Tx]
	// driver begins and ends transactions.
	driver queue.TxDriver[Tx]
	// pushIn pushes in tx (the accessor's WithTx).
	pushIn func(ctx context.Context, tx Tx, p payload.Task) (queue.PushResult, error)
	// exec runs a statement with arguments in tx, written with ? for the
	// arguments.
	exec func(ctx context.Context, tx Tx, stmt string, args ...any) error
}

// begin starts a transaction that the test rolls back if it is left open.
func (x *txEngine[Tx]) begin(t *testing.T) Tx {
	t.Helper()
	tx, err := x.driver.Begin(context.Background(), queue.DefaultIsolation)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.driver.Rollback(context.Background(), tx) })
	return tx
}

// eachEngine runs test once per engine, in parallel subtests named after
// the engines, each with a fresh migrated database.
func eachEngine(t *testing.T, test func(t *testing.T, e *engine)) {
	t.Helper()
	t.Parallel()
	for _, name := range dbtest.ThisRun() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, open(t, name))
		})
	}
}

// eachTx runs the transaction-mode suite pg or my on each engine.
func eachTx(t *testing.T, pg func(*testing.T, *engine, *txEngine[pgx.Tx]), my func(*testing.T, *engine, *txEngine[*sql.Tx])) {
	t.Helper()
	eachEngine(t, func(t *testing.T, e *engine) {
		if e.pg != nil {
			pg(t, e, e.pg)
		} else {
			my(t, e, e.my)
		}
	})
}

// open creates and migrates a database of engine name.
func open(t *testing.T, name string) *engine {
	t.Helper()
	db := dbtest.New(t, name)
	dir := "db/migrations"
	if name == dburl.MySQL {
		dir = "mysql/db/migrations"
	}
	m, err := migrate.Open(db.Address, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(context.Background(), io.Discard); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	e := &engine{name: name, db: db}
	switch name {
	case dburl.PostgreSQL:
		pool := poolFor(t, db.Address)
		task, tx := jobs.NewTaskQueue(pool), jobs.NewTxtaskQueue(pool)
		e.task, e.kept, e.nowait = task, jobs.NewKeptQueue(pool), jobs.NewNowaitQueue(pool)
		e.periodic = []periodicQueue{task, tx}
		e.noRows = pgx.ErrNoRows
		e.pg = &txEngine[pgx.Tx]{q: tx, driver: queueimpl.Pgx(pool),
			pushIn: func(ctx context.Context, t pgx.Tx, p payload.Task) (queue.PushResult, error) {
				return tx.WithTx(t).Push(ctx, p)
			},
			exec: func(ctx context.Context, t pgx.Tx, stmt string, args ...any) error {
				_, err := t.Exec(ctx, dollars(stmt), args...)
				return err
			}}
	case dburl.MySQL:
		task, tx := myjobs.NewTaskQueue(db.SQL), myjobs.NewTxtaskQueue(db.SQL)
		e.task, e.kept, e.nowait = task, myjobs.NewKeptQueue(db.SQL), myjobs.NewNowaitQueue(db.SQL)
		e.periodic = []periodicQueue{task, tx}
		e.noRows = sql.ErrNoRows
		e.my = &txEngine[*sql.Tx]{q: tx, driver: queueimpl.MySQL(db.SQL),
			pushIn: func(ctx context.Context, t *sql.Tx, p payload.Task) (queue.PushResult, error) {
				return tx.WithTx(t).Push(ctx, p)
			},
			exec: func(ctx context.Context, t *sql.Tx, stmt string, args ...any) error {
				_, err := t.ExecContext(ctx, stmt, args...)
				return err
			}}
	}
	return e
}

// dollars numbers a statement's ? placeholders for PostgreSQL ($1, $2…).
func dollars(stmt string) string {
	var b strings.Builder
	n := 0
	for _, r := range stmt {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// exec runs a statement on the engine's database; args are written ?.
func (e *engine) exec(t *testing.T, stmt string, args ...any) {
	t.Helper()
	if e.name == dburl.PostgreSQL {
		stmt = dollars(stmt)
	}
	if _, err := e.db.SQL.Exec(stmt, args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// sql picks the statement of the engine's dialect.
func (e *engine) sql(pg, my string) string {
	if e.name == dburl.MySQL {
		return my
	}
	return pg
}

// count runs a count(*) query on the engine's database.
func (e *engine) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	if e.name == dburl.PostgreSQL {
		query = dollars(query)
	}
	var n int
	if err := e.db.SQL.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// task is a payload.
func task(name string) payload.Task { return payload.Task{Name: name} }
