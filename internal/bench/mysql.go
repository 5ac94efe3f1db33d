package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3"

	"github.com/queuegen/queuegen/internal/bench/myjobs"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/queue"
)

// myTarget is a MySQL or MariaDB server. MySQL has no schemas inside a
// database, so the bench works in a database of its own (Schema, unless a
// test names another), which it creates and drops on the server the
// address names; the address's own database is not touched.
type myTarget struct {
	admin    *sql.DB // on the address's database: CREATE and DROP DATABASE
	db       *sql.DB // on the bench's database
	database string
	dsn      string // the bench database's, for the worker processes
}

func newMySQL(d dburl.DB, database string, conns int) (*myTarget, error) {
	admin, err := d.Open()
	if err != nil {
		return nil, err
	}
	cfg := d.MySQL.Clone()
	cfg.DBName = database
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		admin.Close()
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return &myTarget{admin: admin, db: db, database: database, dsn: cfg.FormatDSN()}, nil
}

func (t *myTarget) close() {
	t.db.Close()
	t.admin.Close()
}

func (t *myTarget) setup(ctx context.Context) error {
	t.teardown()
	if _, err := t.admin.ExecContext(ctx, "CREATE DATABASE `"+t.database+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		return err
	}
	dir, err := fs.Sub(mysqlMigrations, "db/mysql/migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectMySQL, t.db, dir)
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

func (t *myTarget) teardown() {
	t.db.SetMaxIdleConns(0) // close the connections on the database to drop
	t.admin.Exec("DROP DATABASE IF EXISTS `" + t.database + "`")
	t.db.SetMaxIdleConns(t.db.Stats().MaxOpenConnections)
}

func myPayload(n int64) myjobs.BenchPayload {
	return myjobs.BenchPayload{Recipient: "a@example.com", N: int32(n)}
}

func (t *myTarget) pushers(ctx context.Context, n int) ([]func(context.Context, int64) error, func(), error) {
	return connPushers(ctx, t.db, n, func(c *sql.Conn) func(context.Context, int64) error {
		q := myjobs.NewBenchQueue(c)
		return func(ctx context.Context, n int64) error { _, err := q.Push(ctx, myPayload(n)); return err }
	})
}

func (t *myTarget) pushMany(ctx context.Context, from, to int64) (int64, error) {
	batch := make([]myjobs.BenchPayload, 0, to-from)
	for n := from; n < to; n++ {
		batch = append(batch, myPayload(n))
	}
	return myjobs.NewBenchQueue(t.db).PushMany(ctx, batch)
}

func (t *myTarget) fill(ctx context.Context, n int) error {
	if err := pushInBatches(ctx, n, 1000, func(i int) myjobs.BenchPayload { return myPayload(int64(i)) }, myjobs.NewBenchQueue(t.db).PushMany); err != nil {
		return err
	}
	_, err := t.db.ExecContext(ctx, "ANALYZE TABLE bench_queue")
	return err
}

// worker: MySQL has no LISTEN/NOTIFY; a push through an accessor of this
// process wakes the process's idle workers of the queue at once, so the
// latency workload measures that wake, and latency-poll the polling.
func (t *myTarget) worker(ctx context.Context, started func(), wake bool, opts ...queue.WorkerOption) (runner, func(context.Context, int64) error, func(), error) {
	q := myjobs.NewBenchQueue(t.db)
	push := func(ctx context.Context, n int64) error { _, err := q.Push(ctx, myPayload(n)); return err }
	if !wake {
		// A push from another process: nothing wakes the worker.
		push = func(ctx context.Context, n int64) error {
			_, err := t.db.ExecContext(ctx, "INSERT INTO bench_queue (recipient, n, max_attempts, created_at, run_after) VALUES (?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))",
				"a@example.com", n, myjobs.BenchMaxAttempts)
			return err
		}
	}
	return q.Worker(handler[myjobs.BenchPayload](started), opts...), push, func() {}, nil
}

func (t *myTarget) depth(ctx context.Context) (int64, error) {
	return myjobs.NewBenchQueue(t.db).Depth(ctx)
}

func (t *myTarget) left(ctx context.Context) (int64, error) {
	var n int64
	err := t.db.QueryRowContext(ctx, "SELECT count(*) FROM bench_queue").Scan(&n)
	return n, err
}

// health reads InnoDB's purge backlog (the history list: undo not yet
// purged, InnoDB's dead rows) and the table's size.
func (t *myTarget) health(ctx context.Context) (string, error) {
	var rows, size int64
	if err := t.db.QueryRowContext(ctx, `SELECT table_rows, data_length + index_length FROM information_schema.tables
WHERE table_schema = DATABASE() AND table_name = 'bench_queue'`).Scan(&rows, &size); err != nil {
		return "", err
	}
	var history int64
	if err := t.db.QueryRowContext(ctx, `SELECT count FROM information_schema.innodb_metrics WHERE name = 'trx_rseg_history_len'`).Scan(&history); err != nil {
		history = -1
	}
	return fmt.Sprintf("InnoDB history list %d, rows ~%d, table with indexes %.1f MB", history, rows, float64(size)/(1<<20)), nil
}

func (t *myTarget) keptWorker(ctx context.Context, opts ...queue.WorkerOption) runner {
	return myjobs.NewBenchKeptQueue(t.db).Worker(handler[myjobs.BenchKeptPayload](nil), opts...)
}

// fillKept inserts the finished jobs 10,000 at a time (older ids than the
// queued ones, as history is), then pushes the queued ones.
func (t *myTarget) fillKept(ctx context.Context, finished, queued int) error {
	const digits = "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	for i := 0; i < finished; i += 10000 {
		if _, err := t.db.ExecContext(ctx, `INSERT INTO bench_kept_queue (state, attempt, max_attempts, created_at, run_after, attempted_at, finished_at, recipient, n)
SELECT 'succeeded', 1, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), 'a@example.com', a.d + 10 * b.d + 100 * c.d + 1000 * e.d
FROM `+digits+` a CROSS JOIN `+digits+` b CROSS JOIN `+digits+` c CROSS JOIN `+digits+` e
LIMIT ?`, myjobs.BenchKeptMaxAttempts, min(10000, finished-i)); err != nil {
			return err
		}
	}
	if err := pushInBatches(ctx, queued, 1000, func(i int) myjobs.BenchKeptPayload { return myjobs.BenchKeptPayload(myPayload(int64(i))) },
		myjobs.NewBenchKeptQueue(t.db).PushMany); err != nil {
		return err
	}
	_, err := t.db.ExecContext(ctx, "ANALYZE TABLE bench_kept_queue")
	return err
}

// sizes are InnoDB's figures from its statistics: approximate.
func (t *myTarget) sizes(ctx context.Context, kept bool) (table, indexes int64, err error) {
	name := "bench_queue"
	if kept {
		name = "bench_kept_queue"
	}
	err = t.db.QueryRowContext(ctx, `SELECT data_length, index_length FROM information_schema.tables
WHERE table_schema = DATABASE() AND table_name = ?`, name).Scan(&table, &indexes)
	return table, indexes, err
}

// holdSnapshot holds a consistent-snapshot transaction's read view: until
// it ends, InnoDB's purge keeps every row version deleted or replaced
// after it began (the history list grows).
func (t *myTarget) holdSnapshot(ctx context.Context) (func(), error) {
	conn, err := t.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		conn.Close()
		return nil, err
	}
	return func() {
		conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
	}, nil
}

// myChildWorker is c's worker on MySQL or MariaDB (see childWorker).
func myChildWorker(d dburl.DB, c child) (runner, func(), error) {
	limited, rated := childOptions(c)
	db, err := d.Open()
	if err != nil {
		return nil, nil, err
	}
	switch c.Queue {
	case "bench_limited":
		return myjobs.NewBenchLimitedQueue(db).Worker(func(context.Context, *queue.Job[myjobs.BenchLimitedPayload]) error {
			time.Sleep(limitsWork)
			return nil
		}, limited...), func() { db.Close() }, nil
	case "bench_rated":
		return myjobs.NewBenchRatedQueue(db).Worker(func(context.Context, *queue.Job[myjobs.BenchRatedPayload]) error { return nil },
			rated...), func() { db.Close() }, nil
	}
	db.Close()
	return nil, nil, fmt.Errorf("no queue %s", c.Queue)
}
