package bench

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/queuegen/queuegen/internal/bench/jobs"
	"github.com/queuegen/queuegen/queue"
	"github.com/queuegen/queuegen/queue/queuepgx"
)

// pgTarget is a PostgreSQL database; the bench works in schema Schema.
type pgTarget struct {
	pool *pgxpool.Pool
	url  string
}

func newPostgres(ctx context.Context, url string, conns int) (*pgTarget, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &pgTarget{pool, url}, nil
}

func (t *pgTarget) close() { t.pool.Close() }

// setup applies the bench queue's migrations to a fresh schema, with
// goose's version table inside it.
func (t *pgTarget) setup(ctx context.Context) error {
	t.teardown()
	if _, err := t.pool.Exec(ctx, "CREATE SCHEMA "+Schema); err != nil {
		return err
	}
	dir, err := fs.Sub(migrations, "db/migrations")
	if err != nil {
		return err
	}
	store, err := database.NewStore(database.DialectPostgres, Schema+".goose_db_version")
	if err != nil {
		return err
	}
	db := stdlib.OpenDBFromPool(t.pool)
	defer db.Close()
	p, err := goose.NewProvider("", db, dir, goose.WithStore(store))
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// SetupPostgres creates the bench schema on pool's database with the
// tables of every bench queue, as the workloads run on them (queue bench
// is queuegen_bench.bench_queue, its statements those of package
// internal/bench/jobs), for experiments that measure parts of a workload
// on their own. drop removes the schema again.
func SetupPostgres(ctx context.Context, pool *pgxpool.Pool) (drop func(), err error) {
	t := &pgTarget{pool: pool}
	if err := t.setup(ctx); err != nil {
		return nil, err
	}
	return t.teardown, nil
}

func (t *pgTarget) teardown() {
	t.pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+Schema+" CASCADE")
}

func payload(n int64) jobs.BenchPayload {
	return jobs.BenchPayload{Recipient: "a@example.com", N: int32(n)}
}

func (t *pgTarget) pushers(ctx context.Context, n int) ([]func(context.Context, int64) error, func(), error) {
	var conns []*pgxpool.Conn
	release := func() {
		for _, c := range conns {
			c.Release()
		}
	}
	push := make([]func(context.Context, int64) error, n)
	for i := range push {
		c, err := t.pool.Acquire(ctx)
		if err != nil {
			release()
			return nil, nil, err
		}
		conns = append(conns, c)
		q := jobs.NewBenchQueue(c.Conn())
		push[i] = func(ctx context.Context, n int64) error { _, err := q.Push(ctx, payload(n)); return err }
	}
	return push, release, nil
}

func (t *pgTarget) pushMany(ctx context.Context, from, to int64) (int64, error) {
	batch := make([]jobs.BenchPayload, 0, to-from)
	for n := from; n < to; n++ {
		batch = append(batch, payload(n))
	}
	return jobs.NewBenchQueue(t.pool).PushMany(ctx, batch)
}

func (t *pgTarget) fill(ctx context.Context, n int) error {
	if err := pushInBatches(ctx, n, 10000, func(i int) jobs.BenchPayload { return payload(int64(i)) }, jobs.NewBenchQueue(t.pool).PushMany); err != nil {
		return err
	}
	_, err := t.pool.Exec(ctx, "VACUUM ANALYZE "+Schema+".bench_queue")
	return err
}

func (t *pgTarget) worker(ctx context.Context, started func(), wake bool, opts ...queue.WorkerOption) (runner, func(context.Context, int64) error, func(), error) {
	if !wake {
		q := jobs.NewBenchQueue(t.pool)
		push := func(ctx context.Context, n int64) error { _, err := q.Push(ctx, payload(n)); return err }
		return q.Worker(handler[jobs.BenchPayload](started), opts...), push, func() {}, nil
	}
	listener := queuepgx.NewListener(t.pool, quiet)
	q := jobs.NewBenchNotifyQueue(t.pool)
	w := q.Worker(handler[jobs.BenchNotifyPayload](started), append(opts, queue.WithListener(listener))...)
	push := func(ctx context.Context, n int64) error {
		_, err := q.Push(ctx, jobs.BenchNotifyPayload(payload(n)))
		return err
	}
	return listenerReady{w, t.pool}, push, listener.Close, nil
}

// listenerReady is a worker woken by LISTEN/NOTIFY, with a way to wait
// until its listener listens.
type listenerReady struct {
	runner
	pool *pgxpool.Pool
}

// ready waits until the worker's listener is listening, so that the
// first push's notification is not missed.
func (l listenerReady) ready(ctx context.Context) error {
	for range 500 {
		var n int
		if err := l.pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'queuegen-listener' AND datname = current_database() AND query LIKE 'LISTEN%'").Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("the listener did not start")
}

func (t *pgTarget) depth(ctx context.Context) (int64, error) {
	return jobs.NewBenchQueue(t.pool).Depth(ctx)
}

func (t *pgTarget) left(ctx context.Context) (int64, error) {
	var n int64
	err := t.pool.QueryRow(ctx, "SELECT count(*) FROM "+Schema+".bench_queue").Scan(&n)
	return n, err
}

func (t *pgTarget) health(ctx context.Context) (string, error) {
	var dead, live, size int64
	t.pool.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	if err := t.pool.QueryRow(ctx, `SELECT n_dead_tup, n_live_tup, pg_total_relation_size(relid)
FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'bench_queue'`, Schema).Scan(&dead, &live, &size); err != nil {
		return "", err
	}
	line := fmt.Sprintf("dead tuples %d, live %d, table with indexes %.1f MB", dead, live, float64(size)/(1<<20))
	var autovacuum string
	if err := t.pool.QueryRow(ctx, "SHOW autovacuum").Scan(&autovacuum); err == nil && autovacuum != "on" {
		line += "\nsteady: WARNING: autovacuum is off on this server, so nothing removes dead tuples and the table grows without bound; the queue tables' autovacuum settings need it on"
	}
	return line, nil
}

// handler is the bench's handler: it reports its start when asked to and
// succeeds.
func handler[P any](started func()) queue.Handler[P] {
	return func(context.Context, *queue.Job[P]) error {
		if started != nil {
			started()
		}
		return nil
	}
}

func (t *pgTarget) keptWorker(ctx context.Context, opts ...queue.WorkerOption) runner {
	return jobs.NewBenchKeptQueue(t.pool).Worker(handler[jobs.BenchKeptPayload](nil), opts...)
}

// fillKept inserts the finished jobs with one INSERT … SELECT (older ids
// than the queued ones, as history is), then pushes the queued ones.
func (t *pgTarget) fillKept(ctx context.Context, finished, queued int) error {
	if _, err := t.pool.Exec(ctx, `INSERT INTO `+Schema+`.bench_kept_queue (state, attempt, max_attempts, attempted_at, finished_at, recipient, n)
SELECT 'succeeded', 1, $1, now(), now(), 'a@example.com', g FROM generate_series(1, $2) AS g`, jobs.BenchKeptMaxAttempts, finished); err != nil {
		return err
	}
	if err := pushInBatches(ctx, queued, 10000, func(i int) jobs.BenchKeptPayload { return jobs.BenchKeptPayload(payload(int64(i))) },
		jobs.NewBenchKeptQueue(t.pool).PushMany); err != nil {
		return err
	}
	_, err := t.pool.Exec(ctx, "VACUUM ANALYZE "+Schema+".bench_kept_queue")
	return err
}

func (t *pgTarget) sizes(ctx context.Context, kept bool) (table, indexes int64, err error) {
	name := Schema + ".bench_queue"
	if kept {
		name = Schema + ".bench_kept_queue"
	}
	err = t.pool.QueryRow(ctx, "SELECT pg_table_size($1::regclass), pg_indexes_size($1::regclass)", name).Scan(&table, &indexes)
	return table, indexes, err
}

// holdSnapshot holds a REPEATABLE READ transaction's snapshot: until it
// ends, no row deleted or updated after it began can be removed, by
// vacuum or by an index scan marking its entry dead.
func (t *pgTarget) holdSnapshot(ctx context.Context) (func(), error) {
	tx, err := t.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, "SELECT count(*) FROM "+Schema+".bench_queue WHERE id < 0"); err != nil {
		tx.Rollback(ctx)
		return nil, err
	}
	return func() { tx.Rollback(context.Background()) }, nil
}

// pgChildWorker is c's worker on PostgreSQL (see childWorker).
func pgChildWorker(ctx context.Context, c child) (runner, func(), error) {
	limited, rated := childOptions(c)
	pool, err := pgxpool.New(ctx, c.URL)
	if err != nil {
		return nil, nil, err
	}
	switch c.Queue {
	case "bench_limited":
		return jobs.NewBenchLimitedQueue(pool).Worker(func(context.Context, *queue.Job[jobs.BenchLimitedPayload]) error {
			time.Sleep(limitsWork)
			return nil
		}, limited...), pool.Close, nil
	case "bench_rated":
		return jobs.NewBenchRatedQueue(pool).Worker(func(context.Context, *queue.Job[jobs.BenchRatedPayload]) error { return nil },
			rated...), pool.Close, nil
	}
	pool.Close()
	return nil, nil, fmt.Errorf("no queue %s", c.Queue)
}
