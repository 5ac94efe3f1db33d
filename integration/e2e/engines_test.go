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
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/integration/e2e/citus/cjobs"
	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/integration/e2e/mysql/myjobs"
	"github.com/queuegen/queuegen/integration/e2e/payload"
	"github.com/queuegen/queuegen/integration/e2e/sqlserver/msjobs"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/queue"
	"github.com/queuegen/queuegen/queue/queueimpl/mssqlimpl"
	"github.com/queuegen/queuegen/queue/queueimpl/mysqlimpl"
	"github.com/queuegen/queuegen/queue/queueimpl/pgximpl"
)

// The suites of this file's kind run once per engine: each test calls
// eachEngine (or eachTx, for transaction mode) and gets, per engine, a
// fresh migrated database and the generated accessors of the queues every
// spec declares alike (task, kept, nowait, txtask), whose payload is one Go
// type, payload.Task. They run on PostgreSQL and MySQL, and on SQL Server
// too where $QUEUEGEN_SQLSERVER_URL names one (see dbtest.ThisRun), and on
// a Citus cluster, with every queue distributed, when built with the
// citus tag (see dbtest.AndCitus).

// leaseQueue is what the suites use of a lease-mode queue: any engine's
// generated accessor of task, kept or nowait.
type leaseQueue interface {
	queue.LeaseQueue[payload.Task]
	Push(ctx context.Context, p payload.Task, opts ...queue.PushOption) (queue.PushResult, error)
	PushMany(ctx context.Context, ps []payload.Task, opts ...queue.PushOption) (int64, error)
	Claim(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]*queue.Job[payload.Task], error)
	Complete(ctx context.Context, job *queue.Job[payload.Task]) error
	Fail(ctx context.Context, job *queue.Job[payload.Task], cause error) (queue.State, error)
	FailMany(ctx context.Context, jobs []*queue.Job[payload.Task], causes []error) (map[int64]queue.State, error)
	Snooze(ctx context.Context, job *queue.Job[payload.Task], at time.Time) error
	Extend(ctx context.Context, job *queue.Job[payload.Task], d time.Duration) error
	Get(ctx context.Context, id int64) (*queue.Job[payload.Task], error)
	Reap(ctx context.Context, max int) (int64, error)
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	Depth(ctx context.Context) (int64, error)
	DepthAtMost(ctx context.Context, limit int) (int64, error)
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
	// periodic are task and the queue of the every-second tick (txtask;
	// kept on Citus), as a Scheduler takes them; tickTable is the latter's
	// table and tickGet its Get of a tick's payload name.
	periodic  []periodicQueue
	tickTable string
	tickGet   func(ctx context.Context, id int64) (string, error)
	// noRows is the error Get returns for a job that is gone.
	noRows error
	// pushOpen pushes p to task in a transaction it leaves open, and
	// returns the rollback that ends it.
	pushOpen func(ctx context.Context, p payload.Task, opts ...queue.PushOption) (rollback func(), err error)
	// archived and the archive transaction-mode queues are the archive
	// suite's archtask and txarchtask (on_success: archive), on the
	// engines that have it (PostgreSQL, MySQL): archived is nil elsewhere;
	// pgArchived is PostgreSQL's txarchtask, stdArchived MySQL's.
	archived    purgingQueue
	pgArchived  txQueue[pgx.Tx]
	stdArchived txQueue[*sql.Tx]
	// pg and std are the transaction-mode queue txtask, one set: pg on
	// PostgreSQL (pgx), std on the engines of database/sql (MySQL, SQL
	// Server).
	pg  *txEngine[pgx.Tx]
	std *txEngine[*sql.Tx]
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
	// arguments (see engine.placeholders).
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
	eachEngineOf(t, dbtest.AndCitus(dbtest.AndSQLServer(dbtest.ThisRun())), test)
}

// withoutCitus are eachEngine's engines but Citus: for the tests of what a
// distributed queue does not promise, each saying why where it calls it.
func withoutCitus() []string { return dbtest.AndSQLServer(dbtest.ThisRun()) }

// eachEngineOf is eachEngine on the engines given.
func eachEngineOf(t *testing.T, engines []string, test func(t *testing.T, e *engine)) {
	t.Helper()
	t.Parallel()
	for _, name := range engines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, open(t, name))
		})
	}
}

// eachTx runs the transaction-mode suite on each engine that has
// transaction mode (not Citus, which refuses it on a distributed queue):
// pg on PostgreSQL, std on the engines of database/sql.
func eachTx(t *testing.T, pg func(*testing.T, *engine, *txEngine[pgx.Tx]), std func(*testing.T, *engine, *txEngine[*sql.Tx])) {
	t.Helper()
	eachEngineOf(t, withoutCitus(), func(t *testing.T, e *engine) {
		if e.pg != nil {
			pg(t, e, e.pg)
		} else {
			std(t, e, e.std)
		}
	})
}

// migrations are the migrations directory of each engine's spec.
var migrations = map[string]string{
	dburl.PostgreSQL: "db/migrations",
	dburl.MySQL:      "mysql/db/migrations",
	dburl.SQLServer:  "sqlserver/db/migrations",
	dbtest.Citus:     "citus/db/migrations",
}

// open creates and migrates a database of engine name.
func open(t *testing.T, name string) *engine {
	t.Helper()
	db := dbtest.New(t, name)
	m, err := migrate.Open(db.Address, migrations[name], e2eSchema(db)...)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(context.Background(), io.Discard); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	e := &engine{name: name, db: db, tickTable: "txtask_queue"}
	switch name {
	case dburl.PostgreSQL:
		pool := poolFor(t, db.Address)
		task, tx := jobs.NewTaskQueue(pool), jobs.NewTxtaskQueue(pool)
		e.pushOpen = pushOpenPgx(pool, func(t pgx.Tx) leaseQueue { return task.WithTx(t) })
		e.task, e.kept, e.nowait = task, jobs.NewKeptQueue(pool), jobs.NewNowaitQueue(pool)
		e.periodic = []periodicQueue{task, tx}
		e.archived, e.pgArchived = jobs.NewArchtaskQueue(pool), jobs.NewTxarchtaskQueue(pool)
		e.noRows = pgx.ErrNoRows
		e.pg = &txEngine[pgx.Tx]{q: tx, driver: pgximpl.TxDriver(pool),
			pushIn: func(ctx context.Context, t pgx.Tx, p payload.Task) (queue.PushResult, error) {
				return tx.WithTx(t).Push(ctx, p)
			},
			exec: func(ctx context.Context, t pgx.Tx, stmt string, args ...any) error {
				_, err := t.Exec(ctx, e.placeholders(stmt), args...)
				return err
			}}
	case dbtest.Citus:
		// Transaction mode, the archive, fair_by, limits and rate are
		// refused on a distributed queue (see the README's "Citus"): the
		// suites of those run on the other engines.
		pool := poolFor(t, db.Address)
		task := cjobs.NewTaskQueue(pool)
		kept := cjobs.NewKeptQueue(pool)
		e.pushOpen = pushOpenPgx(pool, func(t pgx.Tx) leaseQueue { return task.WithTx(t) })
		e.task, e.kept, e.nowait = task, kept, cjobs.NewNowaitQueue(pool)
		e.periodic, e.tickTable = []periodicQueue{task, kept}, "kept_queue"
		e.tickGet = func(ctx context.Context, id int64) (string, error) {
			j, err := kept.Get(ctx, id)
			if err != nil {
				return "", err
			}
			return j.Payload.Name, nil
		}
		e.noRows = pgx.ErrNoRows
	case dburl.MySQL:
		task, tx := myjobs.NewTaskQueue(db.SQL), myjobs.NewTxtaskQueue(db.SQL)
		e.pushOpen = pushOpenStd(db.SQL, func(t *sql.Tx) leaseQueue { return task.WithTx(t) })
		e.task, e.kept, e.nowait = task, myjobs.NewKeptQueue(db.SQL), myjobs.NewNowaitQueue(db.SQL)
		e.periodic = []periodicQueue{task, tx}
		e.archived, e.stdArchived = myjobs.NewArchtaskQueue(db.SQL), myjobs.NewTxarchtaskQueue(db.SQL)
		setStd(e, tx, mysqlimpl.TxDriver(db.SQL))
	case dburl.SQLServer:
		task, tx := msjobs.NewTaskQueue(db.SQL), msjobs.NewTxtaskQueue(db.SQL)
		e.pushOpen = pushOpenStd(db.SQL, func(t *sql.Tx) leaseQueue { return task.WithTx(t) })
		e.task, e.kept, e.nowait = task, msjobs.NewKeptQueue(db.SQL), msjobs.NewNowaitQueue(db.SQL)
		e.periodic = []periodicQueue{task, tx}
		setStd(e, tx, mssqlimpl.TxDriver(db.SQL))
	}
	return e
}

// pushOpen is engine.pushOpen: the push of the task accessor bound
// (withTx) to a transaction of its own, which begin starts and rollback
// ends.
func pushOpen[Tx any](begin func(context.Context) (Tx, error), rollback func(Tx), withTx func(Tx) leaseQueue) func(context.Context, payload.Task, ...queue.PushOption) (func(), error) {
	return func(ctx context.Context, p payload.Task, opts ...queue.PushOption) (func(), error) {
		tx, err := begin(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := withTx(tx).Push(ctx, p, opts...); err != nil {
			rollback(tx)
			return nil, err
		}
		return func() { rollback(tx) }, nil
	}
}

// pushOpenPgx is pushOpen on a pgx pool.
func pushOpenPgx(pool *pgxpool.Pool, withTx func(pgx.Tx) leaseQueue) func(context.Context, payload.Task, ...queue.PushOption) (func(), error) {
	return pushOpen(pool.Begin, func(tx pgx.Tx) { tx.Rollback(context.Background()) }, withTx)
}

// pushOpenStd is pushOpen on database/sql, at READ COMMITTED.
func pushOpenStd(db *sql.DB, withTx func(*sql.Tx) leaseQueue) func(context.Context, payload.Task, ...queue.PushOption) (func(), error) {
	begin := func(ctx context.Context) (*sql.Tx, error) {
		return db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	}
	return pushOpen(begin, func(tx *sql.Tx) { tx.Rollback() }, withTx)
}

// stdTxQueue is a database/sql spec's generated accessor of txtask
// (myjobs', msjobs'), whose WithTx gives an accessor of its own type.
type stdTxQueue[Q any] interface {
	txQueue[*sql.Tx]
	WithTx(tx *sql.Tx) Q
}

// setStd makes tx, whose transactions driver begins, e's transaction-mode
// queue on database/sql, where a job that is gone is sql.ErrNoRows.
func setStd[Q stdTxQueue[Q]](e *engine, tx Q, driver queue.TxDriver[*sql.Tx]) {
	e.noRows = sql.ErrNoRows
	e.std = &txEngine[*sql.Tx]{q: tx, driver: driver,
		pushIn: func(ctx context.Context, t *sql.Tx, p payload.Task) (queue.PushResult, error) {
			return tx.WithTx(t).Push(ctx, p)
		},
		exec: func(ctx context.Context, t *sql.Tx, stmt string, args ...any) error {
			_, err := t.ExecContext(ctx, e.placeholders(stmt), args...)
			return err
		}}
}

// placeholders writes a statement's ? placeholders as the engine's driver
// takes them: numbered $1, $2… for PostgreSQL, @p1, @p2… for SQL Server
// (go-mssqldb's sqlserver driver); MySQL's stay ?.
func (e *engine) placeholders(stmt string) string {
	prefix := map[string]string{dburl.PostgreSQL: "$", dbtest.Citus: "$", dburl.SQLServer: "@p"}[e.name]
	if prefix == "" {
		return stmt
	}
	var b strings.Builder
	n := 0
	for _, r := range stmt {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "%s%d", prefix, n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// exec runs a statement on the engine's database; args are written ?.
func (e *engine) exec(t *testing.T, stmt string, args ...any) {
	t.Helper()
	stmt = e.placeholders(stmt)
	if _, err := e.db.SQL.Exec(stmt, args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// postgres reports whether the engine is PostgreSQL, distributed (Citus)
// or not.
func (e *engine) postgres() bool { return e.name == dburl.PostgreSQL || e.name == dbtest.Citus }

// e2eSchema is the migrations' schema option for db: its own schema on
// Citus, none elsewhere.
func e2eSchema(db *dbtest.DB) []migrate.Option {
	if db.Schema == "" {
		return nil
	}
	return []migrate.Option{migrate.Schema(db.Schema)}
}

// sql picks the statement of the engine's dialect: PostgreSQL's, MySQL's
// or SQL Server's (T-SQL).
func (e *engine) sql(pg, my, ms string) string {
	switch e.name {
	case dburl.MySQL:
		return my
	case dburl.SQLServer:
		return ms
	}
	return pg
}

// awaitLockWaits waits until n statements on the engine's database wait
// for a lock, or 5 seconds pass. On MySQL the statements are those whose
// text holds marker (the driver interpolates their arguments): the server
// lists every database's transactions, and its process list, which names
// their databases, leaves out some of those waiting. On Citus the
// statements wait on a worker, which the coordinator's pg_stat_activity
// does not show, and citus_lock_waits does (every test schema's). If the
// count is not reached, the test goes on after the 5 seconds, as it would
// on a machine too slow to get its statements waiting. It reads every
// 200 ms: InnoDB refreshes the transactions it lists only when they were
// last read more than 100 ms before, so reading more often would read the
// same list forever.
func (e *engine) awaitLockWaits(t *testing.T, n int, marker string) {
	t.Helper()
	query, args := e.sql(
		`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
		`SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE ?`,
		`SELECT COUNT(*) FROM sys.dm_exec_requests WHERE blocking_session_id <> 0 AND database_id = DB_ID()`), []any(nil)
	switch e.name {
	case dburl.MySQL:
		args = []any{"%" + marker + "%"}
	case dbtest.Citus:
		query = `SELECT count(*) FROM citus_lock_waits`
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if e.count(t, query, args...) >= n {
			return
		}
	}
}

// count runs a count(*) query on the engine's database; args are written
// ?.
func (e *engine) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	query = e.placeholders(query)
	var n int
	if err := e.db.SQL.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// task is a payload.
func task(name string) payload.Task { return payload.Task{Name: name} }

// pushTasks pushes n tasks named "0" to n-1 in one PushMany.
func pushTasks(t *testing.T, q leaseQueue, n int) {
	t.Helper()
	ps := make([]payload.Task, n)
	for i := range ps {
		ps[i] = task(fmt.Sprint(i))
	}
	if pushed, err := q.PushMany(context.Background(), ps); err != nil || pushed != int64(n) {
		t.Fatalf("PushMany = %d, %v", pushed, err)
	}
}
