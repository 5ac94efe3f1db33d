package reliability_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/integration/reliability/citus/cjobs"
	"github.com/queuegen/queuegen/integration/reliability/jobs"
	"github.com/queuegen/queuegen/integration/reliability/mysql/myjobs"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/mytest"
	"github.com/queuegen/queuegen/internal/pgtest"
	"github.com/queuegen/queuegen/queue"
)

// The scenarios that are not about one engine run once per engine, in
// subtests named after it (eachEngine): each gets a target, a migrated
// database of its engine with the suite's audit, and the generated
// accessors of queues work and event, which both specs (queuegen.yaml and
// mysql/queuegen.yaml) declare alike, seen through one Go payload type per
// queue. Scenarios about PostgreSQL itself (isolation levels, a snapshot
// holding back vacuum, PgBouncer) use its pool and generated package
// directly and run on PostgreSQL only.
//
// A few scenarios run on a Citus cluster too (eachEngineAndCitus), when
// the test binary is built with the citus tag: PostgreSQL's engine, with
// the spec of citus/queuegen.yaml (package cjobs), whose queues work and
// event are distributed, on a schema of the test's own on the coordinator
// of $QUEUEGEN_CITUS_URL; their lines read "<scenario> (citus)". Citus
// refuses limits, fair claims, rates, backlogs, archives and transaction
// mode on a distributed queue, so the scenarios of those are not among
// them.

const (
	postgres = dburl.PostgreSQL
	mysqlEng = dburl.MySQL
	citus    = dbtest.Citus
)

// eachEngine runs test once per engine, in parallel subtests named after
// the engines.
func eachEngine(t *testing.T, test func(t *testing.T, engine string)) {
	t.Helper()
	eachEngineOf(t, dbtest.ThisRun(), test)
}

// eachEngineAndCitus is eachEngine on a Citus cluster too, when the test
// binary is built with the citus tag (dbtest.AndCitus): for the scenarios
// about what every queue promises whatever runs it (workers killed,
// connections terminated).
func eachEngineAndCitus(t *testing.T, test func(t *testing.T, engine string)) {
	t.Helper()
	eachEngineOf(t, dbtest.AndCitus(dbtest.ThisRun()), test)
}

// eachEngineOf runs test once per engine of engines, in parallel subtests
// named after them.
func eachEngineOf(t *testing.T, engines []string, test func(t *testing.T, engine string)) {
	t.Helper()
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			test(t, engine)
		})
	}
}

// work is queue work's payload and event queue event's, as the scenarios
// on every engine see them: each engine's generated payload struct
// converts to them.
type (
	work struct {
		N    int64
		Kind string
	}
	event struct {
		N     int64
		Label string
	}
	// keyed is the payload of the queues whose jobs belong to a tenant
	// (limited, backlogged, fair, rated, archived).
	keyed struct {
		N      int64
		Tenant string
	}
)

// target is one engine's migrated database with the suite's audit.
type target struct {
	engine string
	// address is its URL (PostgreSQL, Citus) or DSN (MySQL): workerproc's
	// -db.
	address string
	// schema is the test's own schema on the Citus cluster, whose
	// coordinator's database the tests share, and application the
	// application_name of every session of the test's there (so that
	// terminateSessions ends the test's own sessions only); "" elsewhere.
	schema, application string
	// pool is the PostgreSQL (and Citus) pool; db the MySQL handle.
	pool *pgxpool.Pool
	db   *sql.DB
	// work and events are the accessors of queues work and event.
	work   lease[work]
	events lease[event]
	// keyed are the accessors of the queues of payload keyed, by queue
	// name (none on Citus).
	keyed map[string]lease[keyed]
}

// on sets tg's accessors on its pool (PostgreSQL, Citus) or handle (MySQL).
func (tg *target) on() *target {
	switch tg.engine {
	case citus:
		tg.work = adapt[cjobs.WorkPayload, work](cjobs.NewWorkQueue(tg.pool),
			func(w work) cjobs.WorkPayload { return cjobs.WorkPayload(w) }, func(p cjobs.WorkPayload) work { return work(p) })
		tg.events = adapt[cjobs.EventPayload, event](cjobs.NewEventQueue(tg.pool),
			func(e event) cjobs.EventPayload { return cjobs.EventPayload(e) }, func(p cjobs.EventPayload) event { return event(p) })
	case postgres:
		tg.work = adapt[jobs.WorkPayload, work](jobs.NewWorkQueue(tg.pool),
			func(w work) jobs.WorkPayload { return jobs.WorkPayload(w) }, func(p jobs.WorkPayload) work { return work(p) })
		tg.events = adapt[jobs.EventPayload, event](jobs.NewEventQueue(tg.pool),
			func(e event) jobs.EventPayload { return jobs.EventPayload(e) }, func(p jobs.EventPayload) event { return event(p) })
		tg.keyed = map[string]lease[keyed]{
			"limited": adaptKeyed(jobs.NewLimitedQueue(tg.pool)), "backlogged": adaptKeyed(jobs.NewBackloggedQueue(tg.pool)),
			"fair": adaptKeyed(jobs.NewFairQueue(tg.pool)), "rated": adaptKeyed(jobs.NewRatedQueue(tg.pool)),
			"archived": adaptKeyed(jobs.NewArchivedQueue(tg.pool)),
		}
	case mysqlEng:
		tg.work = adapt[myjobs.WorkPayload, work](myjobs.NewWorkQueue(tg.db),
			func(w work) myjobs.WorkPayload { return myjobs.WorkPayload(w) }, func(p myjobs.WorkPayload) work { return work(p) })
		tg.events = adapt[myjobs.EventPayload, event](myjobs.NewEventQueue(tg.db),
			func(e event) myjobs.EventPayload { return myjobs.EventPayload(e) }, func(p myjobs.EventPayload) event { return event(p) })
		tg.keyed = map[string]lease[keyed]{
			"limited": adaptKeyed(myjobs.NewLimitedQueue(tg.db)), "backlogged": adaptKeyed(myjobs.NewBackloggedQueue(tg.db)),
			"fair": adaptKeyed(myjobs.NewFairQueue(tg.db)), "rated": adaptKeyed(myjobs.NewRatedQueue(tg.db)),
			"archived": adaptKeyed(myjobs.NewArchivedQueue(tg.db)),
		}
	}
	return tg
}

// withPool is tg with its PostgreSQL accessors on another pool of the
// same database.
func (tg *target) withPool(pool *pgxpool.Pool) *target {
	c := *tg
	c.pool = pool
	return c.on()
}

// label names the engine in a scenario's report line: nothing for
// PostgreSQL, whose lines predate the MySQL engine.
func (tg *target) label() string {
	if tg.engine == postgres {
		return ""
	}
	return " (" + tg.engine + ")"
}

// pg reports whether tg is a PostgreSQL database (Citus's coordinator is
// one): its handle is the pgx pool, its statements are PostgreSQL's.
func (tg *target) pg() bool { return tg.engine != mysqlEng }

// migrations is the engine's migrations directory.
func migrations(engine string) string {
	switch engine {
	case mysqlEng:
		return "mysql/db/migrations"
	case citus:
		return "citus/db/migrations"
	}
	return "db/migrations"
}

// workerArgs are the arguments of a workerproc on tg besides -db, -node,
// -instance and -queue: -citus, on Citus, for the Citus spec's package.
func (tg *target) workerArgs() []string {
	if tg.engine == citus {
		return []string{"-citus"}
	}
	return nil
}

// exec runs a statement whose arguments are written ?.
func (tg *target) exec(ctx context.Context, stmt string, args ...any) error {
	var err error
	if tg.pg() {
		_, err = tg.pool.Exec(ctx, dollars(stmt), args...)
	} else {
		_, err = tg.db.ExecContext(ctx, stmt, args...)
	}
	return err
}

// queryInt runs a query of one integer whose arguments are written ?.
func (tg *target) queryInt(ctx context.Context, stmt string, args ...any) (int, error) {
	var n int
	var err error
	if tg.pg() {
		err = tg.pool.QueryRow(ctx, dollars(stmt), args...).Scan(&n)
	} else {
		err = tg.db.QueryRowContext(ctx, stmt, args...).Scan(&n)
	}
	return n, err
}

// count is queryInt that fails the test on an error.
func (tg *target) count(t *testing.T, stmt string, args ...any) int {
	t.Helper()
	n, err := tg.queryInt(context.Background(), stmt, args...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// column runs a query of one text column whose arguments are written ?.
func (tg *target) column(t *testing.T, stmt string, args ...any) []string {
	t.Helper()
	var out []string
	tg.rows(t, func(scan func(dest ...any) error) error {
		var s string
		err := scan(&s)
		out = append(out, s)
		return err
	}, stmt, args...)
	return out
}

// rows runs a query whose arguments are written ?, calling each with the
// scan of every row it returns in turn.
func (tg *target) rows(t *testing.T, each func(scan func(dest ...any) error) error, stmt string, args ...any) {
	t.Helper()
	ctx := context.Background()
	var rows interface {
		Next() bool
		Scan(dest ...any) error
		Err() error
	}
	if tg.pg() {
		r, err := tg.pool.Query(ctx, dollars(stmt), args...)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		rows = r
	} else {
		r, err := tg.db.QueryContext(ctx, stmt, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		rows = r
	}
	for rows.Next() {
		if err := each(rows.Scan); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// jobErrors is the errors column of the first job of table matching where
// (arguments written ?): a text[] on PostgreSQL, a JSON array on MySQL.
func (tg *target) jobErrors(t *testing.T, table, where string, args ...any) []string {
	t.Helper()
	ctx := context.Background()
	stmt := "SELECT errors FROM " + table + " WHERE " + where + " LIMIT 1"
	var errs []string
	if tg.pg() {
		if err := tg.pool.QueryRow(ctx, dollars(stmt), args...).Scan(&errs); err != nil {
			t.Fatal(err)
		}
		return errs
	}
	var doc []byte
	if err := tg.db.QueryRowContext(ctx, stmt, args...).Scan(&doc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(doc, &errs); err != nil {
		t.Fatalf("errors of a job of %s: %v (%s)", table, err, doc)
	}
	return errs
}

// terminateSessions kills every session of tg's database but the
// killer's own, from an admin connection to its server (admin), and
// returns how many it killed: pg_terminate_backend on PostgreSQL, KILL
// CONNECTION on MySQL. On Citus, the coordinator's sessions of the test
// (its application_name), not those of the other tests that share the
// database nor Citus's own: each ends the distributed transaction it was
// in, on the worker nodes too.
func (tg *target) terminateSessions(t *testing.T, admin *sql.DB, pgAdmin *pgxpool.Pool, database string) int {
	t.Helper()
	ctx := context.Background()
	switch tg.engine {
	case postgres:
		tag, _ := pgAdmin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", database)
		return int(tag.RowsAffected())
	case citus:
		tag, _ := pgAdmin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE datname = $1 AND application_name = $2 AND pid <> pg_backend_pid()`, database, tg.application)
		return int(tag.RowsAffected())
	}
	rows, err := admin.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()", database)
	if err != nil {
		return 0
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if rows.Scan(&id) == nil {
			ids = append(ids, id)
		}
	}
	rows.Close()
	killed := 0
	for _, id := range ids {
		// Unknown thread id (1094) when it ended meanwhile.
		if _, err := admin.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err == nil {
			killed++
		}
	}
	return killed
}

// forgetBrokenTriggers, on MySQL, closes the cached tables of database
// that have triggers (the suite's audit), once terminateSessions is done:
// MariaDB parses a table's triggers when a session opens it, and a
// session killed meanwhile leaves the table in the table cache with its
// triggers unparseable, so that every later statement of any session that
// fires them fails ("Unknown trigger has an error in its body: 'Query was
// empty'", 1064) until the table leaves the cache. It first waits for the
// killed sessions to end, so that none opens a table after the flush.
func (tg *target) forgetBrokenTriggers(t *testing.T, admin *sql.DB, database string) {
	t.Helper()
	if tg.engine != mysqlEng {
		return
	}
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var killed int
		if err := admin.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.PROCESSLIST WHERE DB = ? AND COMMAND = 'Killed'", database).Scan(&killed); err == nil && killed == 0 {
			break
		}
	}
	rows, err := admin.QueryContext(ctx, "SELECT DISTINCT EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?", database)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, "`"+database+"`.`"+name+"`")
	}
	rows.Close()
	if len(tables) == 0 {
		return
	}
	if _, err := admin.ExecContext(ctx, "FLUSH TABLES "+strings.Join(tables, ", ")); err != nil {
		t.Fatal(err)
	}
}

// database is the name of tg's database.
func (tg *target) database(t *testing.T) string {
	t.Helper()
	q := "SELECT DATABASE()"
	if tg.pg() {
		q = "SELECT current_database()"
	}
	var name string
	var err error
	if tg.pg() {
		err = tg.pool.QueryRow(context.Background(), q).Scan(&name)
	} else {
		err = tg.db.QueryRow(q).Scan(&name)
	}
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// adminDB is an admin handle on the shared server of engine (MySQL: a
// *sql.DB; PostgreSQL: a pool; Citus: a pool on the coordinator of
// $QUEUEGEN_CITUS_URL), closed when the test ends.
func adminDB(t *testing.T, engine string) (*sql.DB, *pgxpool.Pool) {
	t.Helper()
	if engine != mysqlEng {
		address := os.Getenv(pgtest.EnvCitusURL)
		if engine == postgres {
			address = pgtest.ServerURL(t)
		}
		pool, err := pgxpool.New(context.Background(), address)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return nil, pool
	}
	return mytest.Open(t, mytest.ServerDSN(t)), nil
}

// dollars writes a statement's ? arguments as PostgreSQL's $1, $2, ….
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

// runner is a worker of any payload type.
type runner interface {
	Run(ctx context.Context) error
}

// lease is what the scenarios use of a lease-mode queue, on any engine,
// with its payload seen as W.
type lease[W any] interface {
	push(ctx context.Context, p W, opts ...queue.PushOption) (queue.PushResult, error)
	pushMany(ctx context.Context, ps []W) error
	claim(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]*queue.Job[W], error)
	completeMany(ctx context.Context, jobs []*queue.Job[W]) (int64, error)
	complete(ctx context.Context, job *queue.Job[W]) error
	snoozeFor(ctx context.Context, job *queue.Job[W], d time.Duration) error
	release(ctx context.Context, job *queue.Job[W]) error
	reap(ctx context.Context, max int) (int64, error)
	worker(handler queue.Handler[W], opts ...queue.WorkerOption) runner
}

// accessor is what the scenarios use of a generated lease-mode accessor
// (either engine's) whose payload is P.
type accessor[P any] interface {
	Push(ctx context.Context, p P, opts ...queue.PushOption) (queue.PushResult, error)
	PushMany(ctx context.Context, ps []P, opts ...queue.PushOption) (int64, error)
	Claim(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]*queue.Job[P], error)
	CompleteMany(ctx context.Context, jobs []*queue.Job[P]) (int64, error)
	Complete(ctx context.Context, job *queue.Job[P]) error
	SnoozeFor(ctx context.Context, job *queue.Job[P], d time.Duration) error
	Release(ctx context.Context, job *queue.Job[P]) error
	Reap(ctx context.Context, max int) (int64, error)
	Worker(handler queue.Handler[P], opts ...queue.WorkerOption) *queue.Worker[P]
}

// adapted is a generated accessor of payload P seen as payload W.
type adapted[P, W any] struct {
	q    accessor[P]
	to   func(W) P
	from func(P) W
}

func adapt[P, W any](q accessor[P], to func(W) P, from func(P) W) lease[W] {
	return adapted[P, W]{q: q, to: to, from: from}
}

// adaptKeyed is a generated accessor whose payload is a tenant's job, seen
// as payload keyed.
func adaptKeyed[P ~struct {
	N      int64
	Tenant string
}](q accessor[P]) lease[keyed] {
	return adapt[P, keyed](q, func(k keyed) P { return P(k) }, func(p P) keyed { return keyed(p) })
}

func (a adapted[P, W]) push(ctx context.Context, p W, opts ...queue.PushOption) (queue.PushResult, error) {
	return a.q.Push(ctx, a.to(p), opts...)
}

func (a adapted[P, W]) pushMany(ctx context.Context, ps []W) error {
	conv := make([]P, len(ps))
	for i, p := range ps {
		conv[i] = a.to(p)
	}
	_, err := a.q.PushMany(ctx, conv)
	return err
}

func (a adapted[P, W]) claim(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]*queue.Job[W], error) {
	js, err := a.q.Claim(ctx, node, max, opts...)
	out := make([]*queue.Job[W], len(js))
	for i, j := range js {
		out[i] = retype(j, a.from(j.Payload))
	}
	return out, err
}

func (a adapted[P, W]) completeMany(ctx context.Context, js []*queue.Job[W]) (int64, error) {
	conv := make([]*queue.Job[P], len(js))
	for i, j := range js {
		conv[i] = retype(j, a.to(j.Payload))
	}
	return a.q.CompleteMany(ctx, conv)
}

func (a adapted[P, W]) complete(ctx context.Context, j *queue.Job[W]) error {
	return a.q.Complete(ctx, retype(j, a.to(j.Payload)))
}

func (a adapted[P, W]) snoozeFor(ctx context.Context, j *queue.Job[W], d time.Duration) error {
	return a.q.SnoozeFor(ctx, retype(j, a.to(j.Payload)), d)
}

func (a adapted[P, W]) release(ctx context.Context, j *queue.Job[W]) error {
	return a.q.Release(ctx, retype(j, a.to(j.Payload)))
}

func (a adapted[P, W]) reap(ctx context.Context, max int) (int64, error) { return a.q.Reap(ctx, max) }

func (a adapted[P, W]) worker(handler queue.Handler[W], opts ...queue.WorkerOption) runner {
	return a.q.Worker(func(ctx context.Context, job *queue.Job[P]) error {
		return handler(ctx, retype(job, a.from(job.Payload)))
	}, opts...)
}

// retype is job with payload p.
func retype[P, Q any](job *queue.Job[P], p Q) *queue.Job[Q] {
	return &queue.Job[Q]{ID: job.ID, State: job.State, Attempt: job.Attempt, MaxAttempts: job.MaxAttempts,
		Priority: job.Priority, CreatedAt: job.CreatedAt, RunAfter: job.RunAfter, AttemptedAt: job.AttemptedAt,
		LockedBy: job.LockedBy, LockedUntil: job.LockedUntil, Errors: job.Errors, Payload: p}
}

// freshConnections closes the idle connections of tg's pool, after a test
// has killed them: pgxpool's Reset, and on MySQL no idle connections kept
// for a moment (database/sql closes them), then the suite's 64 again.
func (tg *target) freshConnections() {
	if tg.pool != nil {
		tg.pool.Reset()
	}
	if tg.db != nil {
		tg.db.SetMaxIdleConns(0)
		tg.db.SetMaxIdleConns(64)
	}
}
