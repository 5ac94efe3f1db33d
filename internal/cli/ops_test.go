package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/engine/postgres"
	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/internal/pgtest"
	"github.com/queuegen/queuegen/internal/spec"
)

// seeded migrates the e2e spec's queues into a fresh PostgreSQL database
// and seeds queue email with jobs in every state.
func seeded(t *testing.T) (url string, conn *pgx.Conn) {
	t.Helper()
	url = pgtest.URL(t)
	if code, out, errs := run(t, "migrate", "up", "--db", url, "-f", "../../integration/e2e/queuegen.yaml"); code != 0 {
		t.Fatalf("migrate: %s%s", out, errs)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	if _, err = conn.Exec(ctx, strings.Join(pgSeed, ";\n")); err != nil {
		t.Fatal(err)
	}
	return url, conn
}

// pgSeed are the jobs seeded seeds, in every state.
var pgSeed = []string{
	`INSERT INTO email_queue (recipient, max_attempts) SELECT 'ready', 3 FROM generate_series(1, 3)`,
	`INSERT INTO email_queue (recipient, max_attempts, run_after) VALUES ('later', 3, now() + interval '1 hour')`,
	`INSERT INTO email_queue (recipient, max_attempts, state, attempt, locked_by, locked_until, attempted_at)
    VALUES ('busy', 3, 'running', 1, 'node-1', now() + interval '1 minute', now())`,
	`INSERT INTO email_queue (recipient, max_attempts, attempt, errors) VALUES ('flaky', 3, 1, '{"timeout"}')`,
	`INSERT INTO email_queue (recipient, max_attempts, state, attempt, errors, finished_at)
    SELECT 'bad', 3, 'dead', 3, '{"a","b","smtp: 550 no such user"}', now() FROM generate_series(1, 2)`,
}

// citusOpsSpec is the operations tests' spec on a Citus cluster: queue
// email as in the other engines' (a recipient column, unique keys) and a
// queue with a JSON payload, both distributed. Lease mode (a distributed
// queue has no transaction mode): the tests of a held job hold it with a
// transaction of their own, as a transaction-mode claim would.
const citusOpsSpec = `version: 1
package: {name: q, dir: q}
migrations: db/migrations
queries: db/queries
queues:
  - name: email
    inherits: false
    unique: true
    distribute: {buckets: 32}
    payload:
      columns:
        recipient: text
  - name: report
    inherits: false
    distribute: {buckets: 8}
    payload:
      json:
        fields:
          report_id: bigint
`

// citusSpec writes spec into a module directory of its own, generates it
// and returns the spec file's path, for a test on Citus to migrate.
func citusSpec(t *testing.T, spec string) string {
	t.Helper()
	file := filepath.Join(moduleDir(t), "queuegen.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "generate", "-f", file); code != 0 {
		t.Fatalf("generate the Citus spec: %s%s", out, errs)
	}
	return file
}

// opsDB is one engine's database for the operations tests, migrated with
// a spec's queues; statements on it are written once for both engines
// (see sql).
type opsDB struct {
	engine string
	// url is the address --db takes.
	url string
	db  *sql.DB
	// spec is the spec whose migrations made the queues, and queues how
	// many it registers.
	spec   string
	queues int
	// txQueue is a transaction-mode queue of the spec with a JSON payload
	// column.
	txQueue string
}

// seededOn is a database of engine with queue email seeded as seeded
// seeds it: on PostgreSQL seeded's (the e2e spec), on MySQL the golden
// MySQL case's queues (testdata/mysql: email, with the same column
// recipient, and statement, in transaction mode).
func seededOn(t *testing.T, engine string) *opsDB {
	t.Helper()
	if engine == dbtest.Citus {
		// On a Citus cluster, citusOpsSpec's distributed queues, seeded
		// as seeded seeds PostgreSQL's, each row given its bucket and id.
		db := dbtest.New(t, engine)
		d := &opsDB{engine: engine, url: db.Address, db: db.SQL, spec: citusSpec(t, citusOpsSpec), queues: 2, txQueue: "report"}
		if code, out, errs := run(t, "migrate", "up", "--db", d.url, "-f", d.spec); code != 0 {
			t.Fatalf("migrate: %s%s", out, errs)
		}
		for _, stmt := range pgSeed {
			d.exec(t, stmt)
		}
		return d
	}
	if engine == dburl.PostgreSQL {
		url, _ := seeded(t)
		const e2e = "../../integration/e2e/queuegen.yaml"
		s, err := spec.Load(e2e)
		if err != nil {
			t.Fatal(err)
		}
		return &opsDB{engine: engine, url: url, db: opsOpen(t, url), spec: e2e, queues: len(s.Queues), txQueue: "report"}
	}
	d := &opsDB{engine: engine, url: opsMigrated(t, "../../testdata/mysql/db/migrations"), spec: "../../testdata/mysql/queuegen.yaml", queues: 2, txQueue: "statement"}
	d.db = opsOpen(t, d.url)
	for _, stmt := range []string{
		"INSERT INTO email_queue (recipient, max_attempts, created_at, run_after) VALUES ('ready', 3, {now}, {now}), ('ready', 3, {now}, {now}), ('ready', 3, {now}, {now})",
		"INSERT INTO email_queue (recipient, max_attempts, created_at, run_after) VALUES ('later', 3, {now}, {now} + INTERVAL 1 HOUR)",
		`INSERT INTO email_queue (recipient, max_attempts, state, attempt, locked_by, locked_until, attempted_at, created_at, run_after)
    VALUES ('busy', 3, 'running', 1, 'node-1', {now} + INTERVAL 1 MINUTE, {now}, {now}, {now})`,
		"INSERT INTO email_queue (recipient, max_attempts, attempt, errors, created_at, run_after) VALUES ('flaky', 3, 1, JSON_ARRAY('timeout'), {now}, {now})",
		`INSERT INTO email_queue (recipient, max_attempts, state, attempt, errors, finished_at, created_at, run_after)
    VALUES ('bad', 3, 'dead', 3, JSON_ARRAY('a', 'b', 'smtp: 550 no such user'), {now}, {now}, {now}),
           ('bad', 3, 'dead', 3, JSON_ARRAY('a', 'b', 'smtp: 550 no such user'), {now}, {now}, {now})`,
	} {
		d.exec(t, stmt)
	}
	return d
}

// opsMigrated is the address of a fresh MySQL database with the migrations
// in dir applied.
func opsMigrated(t *testing.T, dir string) string {
	t.Helper()
	db := dbtest.New(t, dburl.MySQL)
	m, err := migrate.Open(db.Address, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(context.Background(), io.Discard); err != nil {
		t.Fatalf("migrate %s: %v", dir, err)
	}
	return db.Address
}

// opsOpen is a database/sql handle on address, closed when the test ends.
func opsOpen(t *testing.T, address string) *sql.DB {
	t.Helper()
	parsed, err := dburl.Parse(address)
	if err != nil {
		t.Fatal(err)
	}
	db, err := parsed.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// eachOpsEngine runs f, in parallel, on a seeded database of each engine,
// and on a Citus cluster when the test binary is built with the citus tag.
func eachOpsEngine(t *testing.T, f func(t *testing.T, d *opsDB)) {
	eachOpsEngineOf(t, dbtest.AndCitus(dbtest.Engines), f)
}

// eachOpsEngineOf runs f, in parallel, on a seeded database of each of
// engines.
func eachOpsEngineOf(t *testing.T, engines []string, f func(t *testing.T, d *opsDB)) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			f(t, seededOn(t, engine))
		})
	}
}

// run is the test's run of a command on d; on Citus, stats without a
// --budget counts with a budget of 10 s: a count over every shard of a
// distributed table rarely fits the default 50 ms (the README's "Citus"
// says so), and the tests want the exact counts.
func (d *opsDB) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if d.engine == dbtest.Citus && args[0] == "stats" && !slices.Contains(args, "--budget") {
		args = append(args, "--budget", "10s")
	}
	return run(t, args...)
}

// pg reports whether the database is PostgreSQL, on one node or
// distributed by Citus.
func (d *opsDB) pg() bool { return d.engine == dburl.PostgreSQL || d.engine == dbtest.Citus }

// dialect is the engine whose SQL the database speaks: PostgreSQL's on
// Citus.
func (d *opsDB) dialect() string {
	if d.pg() {
		return dburl.PostgreSQL
	}
	return d.engine
}

// sql is a statement written for both engines in the engine's dialect:
// {now} is the database's clock (UTC_TIMESTAMP(6) on MySQL, whose times
// are UTC), {errors} the errors column as a JSON array, and each ?
// placeholder becomes $n on PostgreSQL. On Citus an INSERT into a queue
// gives each row its bucket and id (dbtest.CitusInsert).
func (d *opsDB) sql(query string) string {
	now, errs := "UTC_TIMESTAMP(6)", "errors"
	if d.pg() {
		now, errs = "now()", "array_to_json(errors)"
	}
	query = strings.ReplaceAll(strings.ReplaceAll(query, "{now}", now), "{errors}", errs)
	if d.engine == dbtest.Citus {
		query = dbtest.CitusInsert(query)
	}
	if d.pg() {
		var b strings.Builder
		n := 0
		for _, r := range query {
			if r == '?' {
				n++
				b.WriteString("$" + strconv.Itoa(n))
				continue
			}
			b.WriteRune(r)
		}
		query = b.String()
	}
	return query
}

func (d *opsDB) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := d.db.Exec(d.sql(query), args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// one is the single integer query reads.
func (d *opsDB) one(t *testing.T, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := d.db.QueryRow(d.sql(query), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// insert runs an INSERT of one row and returns its id.
func (d *opsDB) insert(t *testing.T, query string, args ...any) int64 {
	t.Helper()
	if d.pg() {
		return d.one(t, query+" RETURNING id", args...)
	}
	res, err := d.db.Exec(d.sql(query), args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// errorsOf reads the errors of job id of table.
func (d *opsDB) errorsOf(t *testing.T, table string, id int64) []string {
	t.Helper()
	var doc string
	if err := d.db.QueryRow(d.sql("SELECT {errors} FROM "+table+" WHERE id = ?"), id).Scan(&doc); err != nil {
		t.Fatal(err)
	}
	var errs []string
	if err := json.Unmarshal([]byte(doc), &errs); err != nil {
		t.Fatalf("errors %s: %v", doc, err)
	}
	return errs
}

func TestStatsCommand(t *testing.T) {
	eachOpsEngine(t, func(t *testing.T, d *opsDB) {
		// A count over every shard of a distributed table (Citus) rarely
		// fits the default budget of 50 ms (the README's "Citus" says so):
		// there the exact counts are asked with a budget of 10 s.
		var budget []string
		if d.engine == dbtest.Citus {
			budget = []string{"--budget", "10s"}
		}
		code, out, errs := run(t, append([]string{"stats", "--db", d.url}, budget...)...)
		if code != 0 {
			t.Fatalf("stats = %d: %s", code, errs)
		}
		// QUEUE READY SCHEDULED RETRYING RUNNING EXPIRED SUCCEEDED DEAD OLDEST CLAIMS/S FAILED (1h)
		// (the failed job is due again, so it is ready; the seeded errors
		// have no times, and email keeps no succeeded job to divide by)
		if !regexp.MustCompile(`(?m)^\s*email\s+4\s+1\s+0\s+1\s+0\s+0\s+2\s+\S+\s+0\.02\s+0 failures\s*$`).MatchString(out) {
			t.Errorf("stats table:\n%s", out)
		}
		if !strings.Contains(out, d.txQueue) || !strings.Contains(out, "CLAIMS/S") {
			t.Errorf("stats lacks a queue or the header:\n%s", out)
		}
		code, out, _ = run(t, append([]string{"stats", "--db", d.url, "-f", d.spec}, budget...)...)
		if d.engine == dburl.PostgreSQL {
			// With the spec, a last row counts every inheriting queue
			// through the base table.
			if code != 0 || !regexp.MustCompile(`(?m)^\s*\* \(base_queue\)\s+4\s+1\s+0\s+1\s+0\s+0\s+2\s`).MatchString(out) {
				t.Errorf("stats with the spec:\n%s", out)
			}
		} else if code != 0 || strings.Contains(out, "* (") || !strings.Contains(out, "email") {
			// MySQL has no INHERITS, nor has a distributed queue (Citus):
			// no row across a base table.
			t.Errorf("stats with the spec:\n%s", out)
		}
		code, out, _ = run(t, append([]string{"stats", "--db", d.url, "--json"}, budget...)...)
		var stats []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &stats) != nil || len(stats) != d.queues {
			t.Fatalf("stats --json = %d:\n%s", code, out)
		}
		for _, s := range stats {
			if s["queue"] == "email" && (s["ready"] != 4.0 || s["scheduled"] != 1.0 || s["dead"] != 2.0 || s["running"] != 1.0 ||
				s["oldest_ready_age_seconds"].(float64) <= 0 || s["oldest_ready_age_seconds"].(float64) > 60 || s["estimated"] != false) {
				t.Errorf("email stats = %v", s)
			}
		}

		// A table larger than the budget can count (1 ms: 2,000 rows, by
		// the catalog's figure) shows the planner's estimates, marked;
		// --exact counts it whole.
		for range 10 {
			d.exec(t, "INSERT INTO email_queue (recipient, max_attempts, created_at, run_after) SELECT recipient, max_attempts, created_at, run_after FROM email_queue WHERE recipient = 'ready'")
		}
		d.exec(t, map[string]string{dburl.PostgreSQL: "ANALYZE email_queue", dburl.MySQL: "ANALYZE TABLE email_queue"}[d.dialect()])
		code, out, errs = d.run(t, "stats", "--db", d.url, "--budget", "1ms")
		if code != 0 || !regexp.MustCompile(`(?m)^\s*email\s+≈\d+\s+≈\d+\s+≈\d+\s+≈\d+\s+≈\d+\s+≈\d+\s+≈\d+\s+\S+\s+-\s+(-|0 failures)\s*$`).MatchString(out) ||
			!strings.Contains(out, "≈: the planner's estimates, for tables too large to count within 1ms") {
			t.Errorf("stats of a large table within 1ms = %d:\n%s%s", code, out, errs)
		}
		// A session holding a snapshot open past --warn-snapshot is named
		// on stderr (some session: other tests share the server).
		held, err := d.db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		begin := map[string]string{dburl.PostgreSQL: "BEGIN ISOLATION LEVEL REPEATABLE READ", dburl.MySQL: "START TRANSACTION WITH CONSISTENT SNAPSHOT"}[d.dialect()]
		if _, err := held.ExecContext(context.Background(), begin); err != nil {
			t.Fatal(err)
		}
		if _, err := held.ExecContext(context.Background(), "SELECT count(*) FROM email_queue"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // InnoDB times a transaction's start to the second
		code, _, errs = d.run(t, "stats", "--db", d.url, "--warn-snapshot", "500ms")
		if code != 0 || !regexp.MustCompile(`warning: session \d+ .*has held a snapshot open for \S+: until it ends, every claim walks past`).MatchString(errs) {
			t.Errorf("stats beside a held snapshot = %d, stderr:\n%s", code, errs)
		}
		held.ExecContext(context.Background(), "ROLLBACK")
		code, out, errs = d.run(t, "stats", "--db", d.url, "--budget", "1ms", "--exact")
		if code != 0 || !regexp.MustCompile(`(?m)^\s*email\s+3073\s+1\s+0\s+1\s+0\s+0\s+2\s`).MatchString(out) || strings.Contains(out, "≈") {
			t.Errorf("stats --exact = %d:\n%s%s", code, out, errs)
		}
	})
}

func TestJobsRetryCancelPurgePause(t *testing.T) {
	eachOpsEngine(t, func(t *testing.T, d *opsDB) {
		url := d.url
		code, out, _ := run(t, "jobs", "--db", url, "--queue", "email", "--state", "dead")
		if code != 0 || strings.Count(out, "smtp: 550 no such user") != 2 || !strings.Contains(out, "3/3") || !strings.Contains(out, "2 jobs of queue email (state dead)") {
			t.Errorf("jobs --state dead = %d:\n%s", code, out)
		}
		if code, out, _ := run(t, "jobs", "--db", url, "--queue", "email", "--state", "failed"); code != 0 || !strings.Contains(out, "timeout") || !strings.Contains(out, "3 jobs") {
			t.Errorf("jobs --state failed = %d:\n%s", code, out)
		}
		if code, _, errs := run(t, "jobs", "--db", url, "--queue", "nope"); code != 1 || !strings.Contains(errs, `no queue "nope" (registered: [`) {
			t.Errorf("jobs of an unknown queue = %d, %q", code, errs)
		}

		// More than one job needs --yes; nothing changes without it.
		code, out, _ = run(t, "retry", "--db", url, "--queue", "email", "--state", "dead")
		if code != 1 || !strings.Contains(out, "2 jobs of queue email match (state dead): nothing retried; pass --yes") {
			t.Errorf("retry without --yes = %d:\n%s", code, out)
		}
		if n := d.one(t, "SELECT count(*) FROM email_queue WHERE state = 'dead'"); n != 2 {
			t.Fatalf("retry without --yes changed something: %d dead", n)
		}
		code, out, _ = run(t, "retry", "--db", url, "--queue", "email", "--state", "dead", "--yes")
		if code != 0 || !strings.Contains(out, "retried 2 jobs of queue email: ") {
			t.Errorf("retry --yes = %d:\n%s", code, out)
		}
		if n := d.one(t, "SELECT count(*) FROM email_queue WHERE recipient = 'bad' AND state = 'available' AND max_attempts = 4 AND attempt = 3 AND finished_at IS NULL AND run_after <= {now}"); n != 2 {
			t.Errorf("retried jobs: %d available now with an attempt left and no finished_at, want 2", n)
		}

		busy := d.one(t, "SELECT id FROM email_queue WHERE recipient = 'busy'")
		code, out, _ = run(t, "cancel", "--db", url, "--queue", "email", "--id", itoa(busy))
		if code != 0 || out != "cancelled 1 job of queue email: "+itoa(busy)+"\n" {
			t.Errorf("cancel --id = %d:\n%q", code, out)
		}
		if n := d.one(t, "SELECT count(*) FROM email_queue WHERE id = ? AND state = 'dead' AND finished_at IS NOT NULL AND locked_by IS NULL AND locked_until IS NULL", busy); n != 1 {
			t.Errorf("the cancelled job is not dead, finished and unlocked")
		}
		if errs := d.errorsOf(t, "email_queue", busy); len(errs) != 1 || errs[0] != "cancelled by an operator" {
			t.Errorf("the cancelled job's errors = %q, want the operator's", errs)
		}

		// Purge asks for --yes too.
		available := d.one(t, "SELECT count(*) FROM email_queue WHERE state = 'available' AND run_after <= {now}")
		code, out, _ = run(t, "purge", "--db", url, "--queue", "email", "--state", "available")
		if code != 1 || !strings.Contains(out, itoa(available)+" jobs of queue email match (state available): nothing purged; pass --yes to purge them") {
			t.Errorf("purge without --yes = %d:\n%s", code, out)
		}
		if n := d.one(t, "SELECT count(*) FROM email_queue WHERE state = 'available' AND run_after <= {now}"); n != available {
			t.Errorf("purge without --yes deleted jobs: %d available, was %d", n, available)
		}
		code, out, _ = run(t, "purge", "--db", url, "--queue", "email", "--state", "dead")
		if code != 0 || out != "purged 1 job of queue email: "+itoa(busy)+"\n" {
			t.Errorf("purge of the one dead job = %d:\n%s", code, out)
		}
		if n := d.one(t, "SELECT count(*) FROM email_queue WHERE id = ?", busy); n != 0 {
			t.Errorf("the purged job is still there")
		}

		if code, out, _ := run(t, "pause", "--db", url, "--queue", "email"); code != 0 || out != "queue email paused: workers see it within their pause check (about a second)\n" {
			t.Errorf("pause = %d: %s", code, out)
		}
		if n := d.one(t, "SELECT count(*) FROM queuegen_queues WHERE name = 'email' AND paused"); n != 1 {
			t.Errorf("pause did not persist")
		}
		if _, out, _ := d.run(t, "stats", "--db", url); !strings.Contains(out, "email (paused)") {
			t.Errorf("stats does not show the pause:\n%s", out)
		}
		if code, out, _ := run(t, "resume", "--db", url, "--queue", "email", "--json"); code != 0 || opsCompact(out) != `{"paused":false,"queue":"email"}` ||
			d.one(t, "SELECT count(*) FROM queuegen_queues WHERE paused") != 0 {
			t.Errorf("resume = %d: %s", code, out)
		}
	})
}

func countRows(t *testing.T, conn *pgx.Conn, sql string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// opsCompact is the JSON document doc on one line.
func opsCompact(doc string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(doc)); err != nil {
		return doc
	}
	return b.String()
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestRetryUniqueConflicts: retry changes every job it can; a job whose
// unique key an unfinished job holds is named with its holder, and of
// several dead jobs sharing a key the newest is retried; the command then
// fails with a summary. A missing id is an error.
func TestRetryUniqueConflicts(t *testing.T) {
	eachOpsEngine(t, func(t *testing.T, d *opsDB) {
		url := d.url
		var heldDead, holder, olderTwin, newerTwin, free int64
		for _, row := range []struct {
			dst        *int64
			state, key string
		}{{&heldDead, "dead", "k1"}, {&holder, "available", "k1"}, {&olderTwin, "dead", "k2"}, {&newerTwin, "dead", "k2"}, {&free, "dead", ""}} {
			var key any
			if row.key != "" {
				key = row.key
			}
			finished := "NULL"
			if row.state == "dead" {
				finished = "{now}"
			}
			cols, vals := "", ""
			if d.engine == dbtest.Citus {
				// A key's jobs share a bucket, as pushes put them (the
				// bucket of the key's hash): here k1's is 1, k2's 2.
				b := map[string]string{"k1": "1", "k2": "2", "": "5"}[row.key]
				cols, vals = "id, bucket, ", "nextval('email_queue_id_seq') * 1024 + "+b+", "+b+", "
			}
			*row.dst = d.insert(t, `INSERT INTO email_queue (`+cols+`recipient, max_attempts, state, attempt, unique_key, finished_at, created_at, run_after)
			VALUES (`+vals+`'u', 1, ?, 1, ?, `+finished+`, {now}, {now})`, row.state, key)
		}
		d.exec(t, "DELETE FROM email_queue WHERE recipient <> 'u'")
		code, out, errs := run(t, "retry", "--db", url, "--queue", "email", "--state", "dead", "--yes")
		wantOut := "retried 2 jobs of queue email: " + itoa(newerTwin) + ", " + itoa(free) + "\n" +
			"not retried: job " + itoa(heldDead) + ", as job " + itoa(holder) + ` holds its unique key "k1" (retry job ` + itoa(heldDead) + " once that one finishes)\n" +
			"not retried: job " + itoa(olderTwin) + ", as job " + itoa(newerTwin) + ` holds its unique key "k2" (retry job ` + itoa(olderTwin) + " once that one finishes)\n"
		if code != 1 || out != wantOut || !strings.Contains(errs, "retried 2 of 4 matching jobs; 2 could not be retried") {
			t.Errorf("retry with conflicts = %d\n%s\nwant\n%s\nstderr %q", code, out, wantOut, errs)
		}
		if n := d.one(t, "SELECT count(*) FROM email_queue WHERE state = 'available' AND finished_at IS NULL AND max_attempts = 2"); n != 2 {
			t.Errorf("%d retried jobs available with an attempt left and no finished_at, want 2", n)
		}
		if n := d.one(t, "SELECT count(*) FROM email_queue WHERE state = 'available'"); n != 3 {
			t.Errorf("%d available after the retry, want the holder and the two retried", n)
		}
		if code, _, errs := run(t, "retry", "--db", url, "--queue", "email", "--id", "99999"); code != 1 || !strings.Contains(errs, "queue email has no job 99999") {
			t.Errorf("retry of a missing id = %d, %q", code, errs)
		}
		if code, _, errs := run(t, "cancel", "--db", url, "--queue", "email", "--id", itoa(heldDead)); code != 1 || !strings.Contains(errs, "is dead; cancel applies to unfinished jobs (available, scheduled, retrying, running and expired)") {
			t.Errorf("cancel of a dead job = %d, %q", code, errs)
		}
		// retry --json has the conflicts.
		code, out, _ = run(t, "retry", "--db", url, "--queue", "email", "--id", itoa(olderTwin), "--json")
		want := `{"queue":"email","action":"retry","changed":[],"locked":[],"conflicts":[{"id":` + itoa(olderTwin) + `,"unique_key":"k2","held_by":` + itoa(newerTwin) + `}]}`
		if code != 1 || opsCompact(out) != want {
			t.Errorf("retry --json of a conflicting job = %d:\n%s\nwant\n%s", code, out, want)
		}
	})
}

// TestOperationsDoNotWaitOnHeldJobs: a job a transaction-mode worker holds
// (its claiming transaction is open) counts as running, not ready, in stats
// (and, on PostgreSQL, is left out of Depth); cancel, retry and purge skip
// it at once, name it, and fail, instead of waiting for the transaction.
func TestOperationsDoNotWaitOnHeldJobs(t *testing.T) {
	eachOpsEngine(t, func(t *testing.T, d *opsDB) {
		ctx := context.Background()
		url, table := d.url, d.txQueue+"_queue"
		push := `INSERT INTO ` + table + ` (payload, max_attempts, created_at, run_after) VALUES (?, 3, {now}, {now})`
		held := d.insert(t, push, `{"report_id": 1}`)
		free := d.insert(t, push, `{"report_id": 2}`)
		tx, err := d.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		// What a transaction-mode claim does: lock the row, count the attempt.
		if _, err := tx.Exec(d.sql("UPDATE "+table+" SET attempt = attempt + 1 WHERE id = ?"), held); err != nil {
			t.Fatal(err)
		}

		// On Citus the queue is in lease mode (a distributed queue has no
		// transaction mode), where a job a transaction holds is what its
		// row last committed says: available. Skipping it, not waiting on
		// it, is what cancel and purge must still do.
		wantReady, wantRunning := 1.0, 1.0
		if d.engine == dbtest.Citus {
			wantReady, wantRunning = 2.0, 0.0
		}
		code, out, _ := d.run(t, "stats", "--db", url, "--json")
		var stats []map[string]any
		json.Unmarshal([]byte(out), &stats)
		for _, s := range stats {
			if s["queue"] == d.txQueue && (s["ready"] != wantReady || s["running"] != wantRunning) {
				t.Errorf("%s stats with one job held = %v; want %v ready, %v running", d.txQueue, s, wantReady, wantRunning)
			}
		}
		if code != 0 {
			t.Errorf("stats = %d", code)
		}
		if d.engine == dburl.PostgreSQL { // the transaction-mode Depth's predicate; Citus has no transaction mode
			if depth := d.one(t, "SELECT count(*) FROM report_queue WHERE state = 'available' AND NOT ("+postgres.Held+")"); depth != 1 {
				t.Errorf("Depth's predicate counts %d, want the one free job", depth)
			}
		}

		begin := time.Now()
		code, out, errs := run(t, "cancel", "--db", url, "--queue", d.txQueue, "--state", "all", "--yes")
		if took := time.Since(begin); took > 3*time.Second {
			t.Errorf("cancel took %v: it waited on the held job", took)
		}
		if code != 1 || !strings.Contains(out, "cancelled 1 job of queue "+d.txQueue+": "+itoa(free)+"\n") ||
			!strings.Contains(out, "skipped 1 job that a transaction in progress holds (a transaction-mode worker working them, or a long transaction): "+itoa(held)+"; run again once it ends\n") ||
			!strings.Contains(errs, "cancelled 1 of 2 matching jobs; 1 could not be cancelled (see above)") {
			t.Errorf("cancel beside a held job = %d:\n%s%s", code, out, errs)
		}
		code, out, _ = run(t, "purge", "--db", url, "--queue", d.txQueue, "--id", itoa(held), "--json")
		if code != 1 || !strings.Contains(opsCompact(out), `"changed":[],"locked":[`+itoa(held)+`],"conflicts":[]}`) {
			t.Errorf("purge --json of the held job = %d:\n%s", code, out)
		}
		// A held job is running: retry does not apply to it, and says so
		// (on Citus, in lease mode, it is available: retry does not apply
		// either).
		code, out, errs = run(t, "retry", "--db", url, "--queue", d.txQueue, "--id", itoa(held), "--json")
		state := "running (a transaction in progress holds it"
		if d.engine == dbtest.Citus {
			state = "available"
		}
		if code != 1 || out != "" || !strings.Contains(errs, "job "+itoa(held)+" of queue "+d.txQueue+" is "+state) {
			t.Errorf("retry --json of the held job = %d:\n%s%s", code, out, errs)
		}
		code, out, _ = run(t, "purge", "--db", url, "--queue", d.txQueue, "--id", itoa(held))
		if code != 1 || !strings.Contains(out, "purged 0 jobs") || !strings.Contains(out, ": "+itoa(held)+";") {
			t.Errorf("purge of the held job = %d:\n%s", code, out)
		}
		tx.Rollback()
		if code, out, errs := run(t, "purge", "--db", url, "--queue", d.txQueue, "--id", itoa(held)); code != 0 || !strings.Contains(out, "purged 1 job") {
			t.Errorf("purge once the transaction ended = %d:\n%s%s", code, out, errs)
		}
	})
}

// TestOperationsRefuseBadInput: flags that cannot mean anything are usage
// errors that change nothing, and text a job carries reaches the terminal
// with its control characters escaped.
func TestOperationsRefuseBadInput(t *testing.T) {
	eachOpsEngine(t, func(t *testing.T, d *opsDB) {
		url := d.url
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"jobs", "--limit", "0"}, "--limit 0: want at least 1"},
			{[]string{"jobs", "--before", "-5"}, `invalid value "-5" for flag -before: want a job id`},
			{[]string{"jobs", "--id", "1", "--state", "dead"}, "--id shows one job"},
			{[]string{"retry", "--state", "running", "--yes"}, "retry never applies to running jobs"},
			{[]string{"cancel", "--state", "succeeded", "--yes"}, "cancel never applies to succeeded jobs"},
			{[]string{"retry", "--state", "available", "--yes"}, "retry never applies to available jobs (it applies to retrying, dead and succeeded jobs)"},
			{[]string{"retry", "--state", "scheduled"}, "retry never applies to scheduled jobs"},
			{[]string{"jobs", "--state", "bogus"}, `--state: unknown state "bogus": want all, available, scheduled`},
			{[]string{"purge", "--state", "bogus", "--yes"}, `--state: unknown state "bogus"`},
			{[]string{"jobs", "--id", "0x10"}, `invalid value "0x10" for flag -id: want a job id: a positive whole number in decimal digits`},
			{[]string{"retry", "--id", "0x10"}, `invalid value "0x10" for flag -id`},
			{[]string{"cancel", "--id", "+16"}, `invalid value "+16" for flag -id`},
			{[]string{"jobs", "--before", "1e3"}, `invalid value "1e3" for flag -before`},
			{[]string{"retry"}, "give --id or --state"},
		} {
			args := append(c.args, "--db", url, "--queue", "email")
			if code, _, errs := run(t, args...); code != 2 || !strings.Contains(errs, c.want) {
				t.Errorf("%v = %d, %q; want a usage error saying %q", c.args, code, errs, c.want)
			}
		}
		if d.pg() {
			// A spec named and missing is not taken for schema public.
			if code, _, errs := run(t, "pause", "--db", url, "--queue", "email", "-f", "nope.yaml"); code != 2 || !strings.Contains(errs, "-f nope.yaml") {
				t.Errorf("pause with a missing -f = %d, %q; want a usage error", code, errs)
			}
			if n := d.one(t, "SELECT count(*) FROM queuegen_queues WHERE paused"); n != 0 {
				t.Errorf("pause with a missing -f paused %d queues", n)
			}
		}
		dead := d.one(t, "SELECT min(id) FROM email_queue WHERE state = 'dead'")
		hostile := "smtp: \x1b[2J\x1b]0;pwned\x07 gone"
		d.exec(t, map[string]string{dburl.PostgreSQL: "UPDATE email_queue SET errors = ARRAY[?::text] WHERE id = ?",
			dburl.MySQL: "UPDATE email_queue SET errors = JSON_ARRAY(?) WHERE id = ?"}[d.dialect()], hostile, dead)
		for _, args := range [][]string{{"jobs", "--id", itoa(dead)}, {"jobs", "--state", "dead"}} {
			_, out, _ := run(t, append(args, "--db", url, "--queue", "email")...)
			if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `smtp: \x1b[2J\x1b]0;pwned\a gone`) {
				t.Errorf("%v printed the error's control characters raw (or not at all):\n%q", args, out)
			}
		}
	})
}

// TestOperationsGiveUpOnHeldLocks: an operation that meets a lock another
// session holds (a migration's, a LOCK TABLE's, a row a long transaction
// updated) gives up after a few seconds and says why, and a pause that
// gave up does not take effect once the lock is let go.
func TestOperationsGiveUpOnHeldLocks(t *testing.T) {
	eachOpsEngine(t, func(t *testing.T, d *opsDB) {
		ctx := context.Background()
		tx, err := d.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback() //nolint:errcheck
		if _, err := tx.Exec(d.sql("UPDATE queuegen_queues SET paused = paused WHERE name = 'email'")); err != nil {
			t.Fatal(err)
		}
		if d.pg() {
			if _, err := tx.Exec("LOCK TABLE email_queue IN ACCESS EXCLUSIVE MODE"); err != nil {
				t.Fatal(err)
			}
		}
		checks := [][]string{{"pause", "--queue", "email"}}
		if d.pg() {
			checks = append(checks, []string{"jobs", "--queue", "email"}, []string{"jobs", "--queue", "email", "--id", "1"}, []string{"stats", "--exact"})
		}
		var wg sync.WaitGroup // at once: each waits out the lock timeout
		for _, args := range checks {
			wg.Go(func() {
				began := time.Now()
				code, _, errs := run(t, append(args, "--db", d.url)...)
				if took := time.Since(began); code != 1 || !strings.Contains(strings.ToLower(errs), "lock") || took > 20*time.Second {
					t.Errorf("%v under a held lock = %d after %v, %q; want to give up on the lock within seconds", args, code, took.Round(time.Millisecond), errs)
				}
			})
		}
		wg.Wait()
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if n := d.one(t, "SELECT count(*) FROM queuegen_queues WHERE paused"); n != 0 {
			t.Errorf("the pause that gave up took effect once the lock was let go")
		}
	})
}

// TestNodesCommand: on each engine, the seeded job leased to node-1, which
// has no row in the nodes table, is listed as leased to a node that
// stopped, in the table and in --json; a node recorded by a heartbeat
// shows with its queue and status. It catches a command that lists no
// orphaned lease, or counts a live node's as one.
func TestNodesCommand(t *testing.T) {
	eachOpsEngine(t, func(t *testing.T, d *opsDB) {
		now := "now()"
		if d.engine == dburl.MySQL {
			now = "UTC_TIMESTAMP(6)"
		}
		d.exec(t, `INSERT INTO queuegen_nodes (node, queue, concurrency, running, host, pid, started_at, heartbeat_at, heartbeat_ms)
VALUES ('node-2', 'email', 4, 0, 'h1', 42, `+now+`, `+now+`, 60000)`)
		code, out, errs := run(t, "nodes", "--db", d.url)
		if code != 0 {
			t.Fatalf("nodes = %d: %s", code, errs)
		}
		if !regexp.MustCompile(`(?m)^node-2\s+email\s+lease\s+h1\s+42\s+4\s+0\s+0\s+.*alive`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^email\s+\d+\s+node-1 \(no node row\)\s+1\s+expires in`).MatchString(out) {
			t.Errorf("nodes:\n%s", out)
		}
		code, out, _ = run(t, "nodes", "--db", d.url, "--json")
		var r struct {
			Nodes []struct {
				Node  string `json:"node"`
				Stale bool   `json:"stale"`
				MS    int64  `json:"heartbeat_ms"`
			} `json:"nodes"`
			Leases []struct {
				Node  string `json:"node"`
				Known bool   `json:"known_node"`
			} `json:"leases"`
			Total int64 `json:"leases_total"`
		}
		if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
			t.Fatalf("nodes --json = %d, %v:\n%s", code, err, out)
		}
		if len(r.Nodes) != 1 || r.Nodes[0].Node != "node-2" || r.Nodes[0].Stale || r.Nodes[0].MS != 60000 ||
			len(r.Leases) != 1 || r.Leases[0].Node != "node-1" || r.Leases[0].Known || r.Total != 1 {
			t.Errorf("nodes --json:\n%s", out)
		}
	})
}
