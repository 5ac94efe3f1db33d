package bench

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/queuegen/queuegen/internal/bench/msjobs"
	"github.com/queuegen/queuegen/internal/dburl"
	msengine "github.com/queuegen/queuegen/internal/engine/sqlserver"
	"github.com/queuegen/queuegen/queue"
)

//go:embed db/sqlserver/migrations/*.sql
var sqlserverMigrations embed.FS

// msTarget is a SQL Server. Like MySQL's, the bench works in a database of
// its own (Schema, unless a test names another; its queues in schema dbo),
// which it creates and drops on the server the address names; the
// address's own database is not touched. A database of its own is also
// where the snapshot case may turn snapshot isolation on (holdSnapshot).
//
// Its SQL is in sqlserver_sql.go. None of it has run against a server:
// no SQL Server runs where queuegen is developed, so the target is
// compiled, its statements pass the T-SQL grammar check, and a server
// that does not answer is an error within msConnectTimeout
// (sqlserver_test.go); its figures are to be measured where a server runs.
type msTarget struct {
	admin    *sql.DB // on the address's database: CREATE and DROP DATABASE
	db       *sql.DB // on the bench's database
	database string
	url      string // the bench database's, for the worker processes
}

// msConnectTimeout bounds connecting (the login included: go-mssqldb
// bounds only the dial by itself) where the address sets no bound of its
// own.
const msConnectTimeout = 10 * time.Second

// msPlainName is a name the target writes into its statements unquoted
// but for [ ].
var msPlainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// msURL is address with its database replaced by database (when not
// empty) and a connection timeout, unless it has one.
func msURL(address, database string) (string, error) {
	u, err := url.Parse(address)
	if err != nil {
		return "", errors.New(dburl.Redact(err.Error(), address))
	}
	q := u.Query()
	timeout := false
	for k := range q {
		switch strings.ToLower(k) { // go-mssqldb's keys are case-insensitive
		case "database":
			if database != "" {
				q.Del(k)
			}
		case "connection timeout":
			timeout = true
		}
	}
	if database != "" {
		q.Set("database", database)
	}
	if !timeout {
		q.Set("connection timeout", strconv.Itoa(int(msConnectTimeout.Seconds())))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// msDatabaseOf is the database address names, "" for the login's default.
func msDatabaseOf(address string) string {
	u, err := url.Parse(address)
	if err != nil {
		return ""
	}
	for k, v := range u.Query() {
		if strings.EqualFold(k, "database") && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// msOpen opens a handle on the SQL Server at address (a URL msURL made).
func msOpen(address string) (*sql.DB, error) {
	d, err := dburl.Parse(address)
	if err != nil {
		return nil, err
	}
	return d.Open()
}

func newSQLServer(ctx context.Context, d dburl.DB, database string, conns int) (*msTarget, error) {
	if !msPlainName.MatchString(database) {
		return nil, fmt.Errorf("the bench's database %q is not a plain identifier", database)
	}
	if strings.EqualFold(msDatabaseOf(d.URL), database) {
		return nil, fmt.Errorf("the bench creates and drops database %s on the server: give the address of another database of that server (e.g. ?database=master)", database)
	}
	adminURL, err := msURL(d.URL, "")
	if err != nil {
		return nil, err
	}
	benchURL, err := msURL(d.URL, database)
	if err != nil {
		return nil, err
	}
	admin, err := msOpen(adminURL)
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, msConnectTimeout+2*time.Second)
	err = admin.PingContext(pingCtx)
	cancel()
	if err != nil {
		admin.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("cannot connect to the database: no answer within %s", msConnectTimeout)
		}
		return nil, fmt.Errorf("cannot connect to the database: %s", dburl.Redact(err.Error(), d.URL))
	}
	db, err := msOpen(benchURL)
	if err != nil {
		admin.Close()
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return &msTarget{admin: admin, db: db, database: database, url: benchURL}, nil
}

func (t *msTarget) close() {
	t.db.Close()
	t.admin.Close()
}

// setup creates the bench's database and applies the SQL Server bench
// queue's migrations there, as queuegen migrate would: the engine's check
// of the database first (its compatibility level), then goose.
func (t *msTarget) setup(ctx context.Context) error {
	t.teardown()
	if _, err := t.admin.ExecContext(ctx, msCreateDatabase(t.database)); err != nil {
		return err
	}
	if err := (msengine.Engine{}).PrepareMigrations(ctx, t.db, msengine.DefaultSchema); err != nil {
		return err
	}
	dir, err := fs.Sub(sqlserverMigrations, "db/sqlserver/migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectMSSQL, t.db, dir, goose.WithTableName(msjobs.MigrationsTable))
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

func (t *msTarget) teardown() {
	t.db.SetMaxIdleConns(0) // close the connections on the database to drop
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.admin.ExecContext(ctx, msDropDatabase(t.database))
	t.db.SetMaxIdleConns(t.db.Stats().MaxOpenConnections)
}

func msPayload(n int64) msjobs.BenchPayload {
	return msjobs.BenchPayload{Recipient: "a@example.com", N: int32(n)}
}

func (t *msTarget) pushers(ctx context.Context, n int) ([]func(context.Context, int64) error, func(), error) {
	return connPushers(ctx, t.db, n, func(c *sql.Conn) func(context.Context, int64) error {
		q := msjobs.NewBenchQueue(c)
		return func(ctx context.Context, n int64) error { _, err := q.Push(ctx, msPayload(n)); return err }
	})
}

func (t *msTarget) pushMany(ctx context.Context, from, to int64) (int64, error) {
	batch := make([]msjobs.BenchPayload, 0, to-from)
	for n := from; n < to; n++ {
		batch = append(batch, msPayload(n))
	}
	return msjobs.NewBenchQueue(t.db).PushMany(ctx, batch)
}

// msFillBatch is fill's PushMany batch: one JSON parameter a batch, so
// SQL Server's 2,100 parameters a statement do not bound it.
const msFillBatch = 10000

func (t *msTarget) fill(ctx context.Context, n int) error {
	if err := pushInBatches(ctx, n, msFillBatch, func(i int) msjobs.BenchPayload { return msPayload(int64(i)) }, msjobs.NewBenchQueue(t.db).PushMany); err != nil {
		return err
	}
	_, err := t.db.ExecContext(ctx, msUpdateStatistics("bench_queue"))
	return err
}

// worker: SQL Server has no LISTEN/NOTIFY (queuegen does not use Service
// Broker); as on MySQL, a push through an accessor of this process wakes
// the process's idle workers of the queue at once, so the latency
// workload measures that wake, and latency-poll the polling.
func (t *msTarget) worker(ctx context.Context, started func(), wake bool, opts ...queue.WorkerOption) (runner, func(context.Context, int64) error, func(), error) {
	q := msjobs.NewBenchQueue(t.db)
	push := func(ctx context.Context, n int64) error { _, err := q.Push(ctx, msPayload(n)); return err }
	if !wake {
		// A push from another process: nothing wakes the worker.
		push = func(ctx context.Context, n int64) error {
			_, err := t.db.ExecContext(ctx, msInsertPolled, "a@example.com", int32(n), int32(msjobs.BenchMaxAttempts))
			return err
		}
	}
	return q.Worker(handler[msjobs.BenchPayload](started), opts...), push, func() {}, nil
}

func (t *msTarget) depth(ctx context.Context) (int64, error) {
	return msjobs.NewBenchQueue(t.db).Depth(ctx)
}

func (t *msTarget) left(ctx context.Context) (int64, error) {
	var n int64
	err := t.db.QueryRowContext(ctx, msCountRows).Scan(&n)
	return n, err
}

// health reads the bench table's ghost records (deleted rows the ghost
// cleanup task has not yet removed: SQL Server's dead rows, sampled), the
// version store the database holds in tempdb (0 unless snapshot isolation
// or read committed snapshot is on; "unreadable" without VIEW SERVER
// STATE or before SQL Server 2017), its rows and its size.
func (t *msTarget) health(ctx context.Context) (string, error) {
	var rows, size int64
	if err := t.db.QueryRowContext(ctx, msRowsAndSize, "bench_queue").Scan(&rows, &size); err != nil {
		return "", err
	}
	var ghosts int64
	if err := t.db.QueryRowContext(ctx, msGhosts("bench_queue")).Scan(&ghosts); err != nil {
		return "", err
	}
	versions := "unreadable"
	var store int64
	if err := t.db.QueryRowContext(ctx, msVersionStore).Scan(&store); err == nil {
		versions = mb(store)
	}
	return fmt.Sprintf("ghost records ~%d, version store %s, rows %d, table with indexes %.1f MB", ghosts, versions, rows, float64(size)/(1<<20)), nil
}

func (t *msTarget) keptWorker(ctx context.Context, opts ...queue.WorkerOption) runner {
	return msjobs.NewBenchKeptQueue(t.db).Worker(handler[msjobs.BenchKeptPayload](nil), opts...)
}

// fillKept inserts the finished jobs msKeptBatch at a time (older ids
// than the queued ones, as history is), then pushes the queued ones.
func (t *msTarget) fillKept(ctx context.Context, finished, queued int) error {
	for i := 0; i < finished; i += msKeptBatch {
		if _, err := t.db.ExecContext(ctx, msFillKept, int32(msjobs.BenchKeptMaxAttempts), int64(min(msKeptBatch, finished-i))); err != nil {
			return err
		}
	}
	if err := pushInBatches(ctx, queued, msFillBatch, func(i int) msjobs.BenchKeptPayload { return msjobs.BenchKeptPayload(msPayload(int64(i))) },
		msjobs.NewBenchKeptQueue(t.db).PushMany); err != nil {
		return err
	}
	_, err := t.db.ExecContext(ctx, msUpdateStatistics("bench_kept_queue"))
	return err
}

// sizes are the used pages of the table's data (clustered index) and of
// its other indexes, from sys.dm_db_partition_stats.
func (t *msTarget) sizes(ctx context.Context, kept bool) (table, indexes int64, err error) {
	name := "bench_queue"
	if kept {
		name = "bench_kept_queue"
	}
	err = t.db.QueryRowContext(ctx, msSizes, name).Scan(&table, &indexes)
	return table, indexes, err
}

// holdSnapshot turns snapshot isolation on in the bench's database (a
// fresh one each case: setup recreates it) and holds a SNAPSHOT
// transaction open on a connection of its own. What it holds back on SQL
// Server: every row version an update or delete replaces from then on
// stays in tempdb's version store, and the ghost records of deleted rows
// stay in the table and its indexes, until the transaction ends. Unlike
// the other engines' snapshot case, the drain it slows also pays for the
// row versioning that turning snapshot isolation on starts (each update
// and delete copies the row's old version, and tags the row with 14
// bytes), which a database that runs reports under SNAPSHOT pays always.
func (t *msTarget) holdSnapshot(ctx context.Context) (func(), error) {
	if _, err := t.db.ExecContext(ctx, msAllowSnapshot); err != nil {
		return nil, err
	}
	conn, err := t.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, msBeginSnapshot); err != nil {
		conn.ExecContext(context.Background(), msEndSnapshot)
		conn.Close()
		return nil, err
	}
	return func() {
		conn.ExecContext(context.Background(), msEndSnapshot)
		conn.Close()
	}, nil
}

// claimModes: SQL Server has all three (fair_by, and backlogs).
func (t *msTarget) claimModes() []claimMode { return claimModes }

func (t *msTarget) pushTenant(ctx context.Context, mode claimMode, tenant func(int) string, n int) error {
	switch mode {
	case fair:
		return pushInBatches(ctx, n, msFillBatch, func(i int) msjobs.BenchFairPayload { return msjobs.BenchFairPayload{Tenant: tenant(i), N: int32(i)} },
			msjobs.NewBenchFairQueue(t.db).PushMany)
	case backlog:
		return pushInBatches(ctx, n, msFillBatch, func(i int) msjobs.BenchBacklogPayload {
			return msjobs.BenchBacklogPayload{Tenant: tenant(i), N: int32(i)}
		}, msjobs.NewBenchBacklogQueue(t.db).PushMany)
	}
	return pushInBatches(ctx, n, msFillBatch, func(i int) msjobs.BenchTenantPayload {
		return msjobs.BenchTenantPayload{Tenant: tenant(i), N: int32(i)}
	},
		msjobs.NewBenchTenantQueue(t.db).PushMany)
}

func (t *msTarget) tenantWorker(mode claimMode, started func(tenant string), opts ...queue.WorkerOption) runner {
	switch mode {
	case fair:
		return msjobs.NewBenchFairQueue(t.db).Worker(func(_ context.Context, j *queue.Job[msjobs.BenchFairPayload]) error {
			started(j.Payload.Tenant)
			return nil
		}, opts...)
	case backlog:
		return msjobs.NewBenchBacklogQueue(t.db).Worker(func(_ context.Context, j *queue.Job[msjobs.BenchBacklogPayload]) error {
			started(j.Payload.Tenant)
			return nil
		}, opts...)
	}
	return msjobs.NewBenchTenantQueue(t.db).Worker(func(_ context.Context, j *queue.Job[msjobs.BenchTenantPayload]) error {
		started(j.Payload.Tenant)
		return nil
	}, opts...)
}

// address is the bench database's URL, for the worker processes.
func (t *msTarget) address() string { return t.url }

func (t *msTarget) pushLimited(ctx context.Context, tenant func(int) string, n int) error {
	return pushInBatches(ctx, n, msFillBatch, func(i int) msjobs.BenchLimitedPayload {
		return msjobs.BenchLimitedPayload{Tenant: tenant(i), N: int32(i)}
	}, msjobs.NewBenchLimitedQueue(t.db).PushMany)
}

func (t *msTarget) limitedRunning(ctx context.Context) (perKey, global int, err error) {
	err = t.db.QueryRowContext(ctx, msLimitedRunning).Scan(&perKey, &global)
	return perKey, global, err
}

func (t *msTarget) limitedLeft(ctx context.Context) (left, running int, err error) {
	err = t.db.QueryRowContext(ctx, msLimitedLeft).Scan(&left, &running)
	return left, running, err
}

func (t *msTarget) pushRated(ctx context.Context, n int) error {
	return pushInBatches(ctx, n, msFillBatch, func(i int) msjobs.BenchRatedPayload { return msjobs.BenchRatedPayload{N: int32(i)} },
		msjobs.NewBenchRatedQueue(t.db).PushMany)
}

func (t *msTarget) ratedLeft(ctx context.Context) (int, error) {
	var n int
	err := t.db.QueryRowContext(ctx, msRatedLeft).Scan(&n)
	return n, err
}

func (t *msTarget) claimTimes(ctx context.Context) ([]time.Time, error) {
	rows, err := t.db.QueryContext(ctx, msClaimTimes)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var claims []time.Time
	for rows.Next() {
		var at time.Time
		if err := rows.Scan(&at); err != nil {
			return nil, err
		}
		claims = append(claims, at)
	}
	return claims, rows.Err()
}

// msChildWorker is c's worker on SQL Server (see childWorker).
func msChildWorker(c child) (runner, func(), error) {
	limited, rated := childOptions(c)
	db, err := msOpen(c.URL)
	if err != nil {
		return nil, nil, err
	}
	switch c.Queue {
	case "bench_limited":
		return msjobs.NewBenchLimitedQueue(db).Worker(func(context.Context, *queue.Job[msjobs.BenchLimitedPayload]) error {
			time.Sleep(limitsWork)
			return nil
		}, limited...), func() { db.Close() }, nil
	case "bench_rated":
		return msjobs.NewBenchRatedQueue(db).Worker(func(context.Context, *queue.Job[msjobs.BenchRatedPayload]) error { return nil },
			rated...), func() { db.Close() }, nil
	}
	db.Close()
	return nil, nil, fmt.Errorf("no queue %s", c.Queue)
}
