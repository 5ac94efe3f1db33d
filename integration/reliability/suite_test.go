package reliability_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/internal/mytest"
	"github.com/queuegen/queuegen/internal/pgtest"
)

// long runs every scenario longer (more jobs, more chaos), for a run
// outside CI: go test ./integration/reliability -reliability.long
var long = flag.Bool("reliability.long", false, "run the fault scenarios longer")

func TestMain(m *testing.M) {
	// The MySQL driver logs each connection that a restart or KILL broke;
	// the scenarios count what matters.
	mysql.SetLogger(log.New(io.Discard, "", 0))
	code := pgtest.RunMain(m)
	if workerDir != "" {
		os.RemoveAll(workerDir)
	}
	reportMu.Lock()
	for _, line := range report {
		fmt.Println(line)
	}
	if path := os.Getenv("QUEUEGEN_RELIABILITY_REPORT"); path != "" && len(report) > 0 {
		// Appended: the run through PgBouncer adds its lines to the direct
		// run's.
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.WriteString(strings.Join(report, "\n") + "\n")
			f.Close()
		}
	}
	reportMu.Unlock()
	if code == 0 {
		// The mutation tests prove the suite can fail: once, in the direct
		// run, is enough.
		code = pgtest.RerunViaPgBouncer("^TestSuiteCatchesMutations$")
	}
	os.Exit(code)
}

var (
	reportMu sync.Mutex
	report   []string
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// scale is a scenario's size: small in CI, larger with -reliability.long.
func scale(ci, longer int) int {
	if *long {
		return longer
	}
	return ci
}

// audit is the suite's accounting, kept by the database and apart from
// the code under test: handlers record each run that returned success in
// handled (lease mode: with a retried, idempotent insert just before
// returning; transaction mode: in the handler's transaction, so it
// commits with the job), triggers log each completion (the row's
// delete) with its attempt, the workers log each lapse of a lease they
// see themselves in lapsed (see workerproc's leases), each claim of queue work that takes a
// running job from its holder (reclaimed: the holder's attempt, its
// lease's end, and the time of the claim, by the database's clock), and
// each claim of a job of queues fair and rated (claimed: its tenant, the
// claim's time, and whether it took the job from a holder whose lease
// had run out rather than as a due job).
const audit = `
CREATE TABLE handled (queue text NOT NULL, job_id bigint NOT NULL, attempt integer NOT NULL, instance text NOT NULL,
    run text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp(), PRIMARY KEY (queue, job_id, attempt, run));
CREATE TABLE lapsed (queue text NOT NULL, job_id bigint NOT NULL, attempt integer NOT NULL, instance text NOT NULL,
    why text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp(), PRIMARY KEY (queue, job_id, attempt, instance, why));
CREATE TABLE completed_log (queue text NOT NULL, job_id bigint NOT NULL, attempt integer NOT NULL);
CREATE FUNCTION log_completion() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO completed_log VALUES (TG_TABLE_NAME, OLD.id, OLD.attempt);
    RETURN OLD;
END $$;
CREATE TRIGGER work_completed AFTER DELETE ON work_queue FOR EACH ROW EXECUTE FUNCTION log_completion();
CREATE TRIGGER ledger_completed AFTER DELETE ON ledger_queue FOR EACH ROW EXECUTE FUNCTION log_completion();
CREATE TRIGGER event_completed AFTER DELETE ON event_queue FOR EACH ROW EXECUTE FUNCTION log_completion();
CREATE TRIGGER limited_completed AFTER DELETE ON limited_queue FOR EACH ROW EXECUTE FUNCTION log_completion();
CREATE TRIGGER backlogged_completed AFTER DELETE ON backlogged_queue FOR EACH ROW EXECUTE FUNCTION log_completion();
CREATE TRIGGER fair_completed AFTER DELETE ON fair_queue FOR EACH ROW EXECUTE FUNCTION log_completion();
CREATE TRIGGER rated_completed AFTER DELETE ON rated_queue FOR EACH ROW EXECUTE FUNCTION log_completion();
CREATE TRIGGER archived_completed AFTER DELETE ON archived_queue FOR EACH ROW EXECUTE FUNCTION log_completion();
CREATE TABLE reclaimed (queue text NOT NULL, job_id bigint NOT NULL, attempt integer NOT NULL, lease_until timestamptz, at timestamptz NOT NULL);
CREATE FUNCTION log_reclaim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO reclaimed VALUES (TG_TABLE_NAME, OLD.id, OLD.attempt, OLD.locked_until, clock_timestamp());
    RETURN NEW;
END $$;
CREATE TRIGGER work_reclaimed AFTER UPDATE ON work_queue FOR EACH ROW
    WHEN (OLD.state = 'running' AND NEW.state = 'running' AND NEW.attempt > OLD.attempt) EXECUTE FUNCTION log_reclaim();
CREATE TABLE claimed (queue text NOT NULL, job_id bigint NOT NULL, attempt integer NOT NULL, tenant text NOT NULL,
    at timestamptz NOT NULL, expired boolean NOT NULL);
CREATE FUNCTION log_claim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO claimed VALUES (TG_TABLE_NAME, NEW.id, NEW.attempt, NEW.tenant, NEW.attempted_at, OLD.state = 'running');
    RETURN NEW;
END $$;
CREATE TRIGGER fair_claimed AFTER UPDATE ON fair_queue FOR EACH ROW
    WHEN (NEW.state = 'running' AND NEW.attempt > OLD.attempt) EXECUTE FUNCTION log_claim();
CREATE TRIGGER rated_claimed AFTER UPDATE ON rated_queue FOR EACH ROW
    WHEN (NEW.state = 'running' AND NEW.attempt > OLD.attempt) EXECUTE FUNCTION log_claim();`

// mysqlAudit is audit on MySQL, one statement at a time: a trigger per
// queue table (MySQL triggers name no function), times in UTC.
var mysqlAudit = []string{
	`CREATE TABLE handled (queue VARCHAR(64) NOT NULL, job_id BIGINT NOT NULL, attempt INT NOT NULL, instance VARCHAR(255) NOT NULL,
    run VARCHAR(32) NOT NULL, at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)), PRIMARY KEY (queue, job_id, attempt, run)) ENGINE = InnoDB`,
	`CREATE TABLE lapsed (queue VARCHAR(64) NOT NULL, job_id BIGINT NOT NULL, attempt INT NOT NULL, instance VARCHAR(255) NOT NULL,
    why VARCHAR(32) NOT NULL, at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)), PRIMARY KEY (queue, job_id, attempt, instance, why)) ENGINE = InnoDB`,
	`CREATE TABLE completed_log (queue VARCHAR(64) NOT NULL, job_id BIGINT NOT NULL, attempt INT NOT NULL, KEY (queue, job_id)) ENGINE = InnoDB`,
	`CREATE TRIGGER work_completed AFTER DELETE ON work_queue FOR EACH ROW INSERT INTO completed_log VALUES ('work_queue', OLD.id, OLD.attempt)`,
	`CREATE TRIGGER ledger_completed AFTER DELETE ON ledger_queue FOR EACH ROW INSERT INTO completed_log VALUES ('ledger_queue', OLD.id, OLD.attempt)`,
	`CREATE TRIGGER event_completed AFTER DELETE ON event_queue FOR EACH ROW INSERT INTO completed_log VALUES ('event_queue', OLD.id, OLD.attempt)`,
	`CREATE TRIGGER limited_completed AFTER DELETE ON limited_queue FOR EACH ROW INSERT INTO completed_log VALUES ('limited_queue', OLD.id, OLD.attempt)`,
	`CREATE TRIGGER backlogged_completed AFTER DELETE ON backlogged_queue FOR EACH ROW INSERT INTO completed_log VALUES ('backlogged_queue', OLD.id, OLD.attempt)`,
	`CREATE TRIGGER fair_completed AFTER DELETE ON fair_queue FOR EACH ROW INSERT INTO completed_log VALUES ('fair_queue', OLD.id, OLD.attempt)`,
	`CREATE TRIGGER rated_completed AFTER DELETE ON rated_queue FOR EACH ROW INSERT INTO completed_log VALUES ('rated_queue', OLD.id, OLD.attempt)`,
	`CREATE TRIGGER archived_completed AFTER DELETE ON archived_queue FOR EACH ROW INSERT INTO completed_log VALUES ('archived_queue', OLD.id, OLD.attempt)`,
	`CREATE TABLE reclaimed (queue VARCHAR(64) NOT NULL, job_id BIGINT NOT NULL, attempt INT NOT NULL, lease_until DATETIME(6), at DATETIME(6) NOT NULL) ENGINE = InnoDB`,
	`CREATE TRIGGER work_reclaimed AFTER UPDATE ON work_queue FOR EACH ROW INSERT INTO reclaimed
SELECT 'work_queue', OLD.id, OLD.attempt, OLD.locked_until, UTC_TIMESTAMP(6) FROM DUAL
WHERE OLD.state = 'running' AND NEW.state = 'running' AND NEW.attempt > OLD.attempt`,
	`CREATE TABLE claimed (queue VARCHAR(64) NOT NULL, job_id BIGINT NOT NULL, attempt INT NOT NULL, tenant VARCHAR(100) NOT NULL,
    at DATETIME(6) NOT NULL, expired BOOLEAN NOT NULL) ENGINE = InnoDB`,
	`CREATE TRIGGER fair_claimed AFTER UPDATE ON fair_queue FOR EACH ROW INSERT INTO claimed
SELECT 'fair_queue', NEW.id, NEW.attempt, NEW.tenant, NEW.attempted_at, OLD.state = 'running' FROM DUAL
WHERE NEW.state = 'running' AND NEW.attempt > OLD.attempt`,
	`CREATE TRIGGER rated_claimed AFTER UPDATE ON rated_queue FOR EACH ROW INSERT INTO claimed
SELECT 'rated_queue', NEW.id, NEW.attempt, NEW.tenant, NEW.attempted_at, OLD.state = 'running' FROM DUAL
WHERE NEW.state = 'running' AND NEW.attempt > OLD.attempt`,
}

// recordSQL records a successful handler run, named by a token of its
// own: running it again for the same run changes nothing.
const recordSQL = "INSERT INTO handled (queue, job_id, attempt, instance, run) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING"

// mysqlRecordSQL is recordSQL on MySQL.
const mysqlRecordSQL = "INSERT INTO handled (queue, job_id, attempt, instance, run) VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE run = run"

// runToken names one handler run.
func runToken() string { return strconv.FormatUint(rand.Uint64(), 36) }

// record records that a lease-mode handler is about to return success,
// retrying until the database has it (the connection may be killed under
// it): each run that returns success is recorded exactly once.
func record(ctx context.Context, tg *target, table string, id int64, attempt int32, instance string) {
	run := runToken()
	ctx = context.WithoutCancel(ctx)
	for {
		var err error
		if tg.pg() {
			_, err = tg.pool.Exec(ctx, recordSQL, table, id, attempt, instance, run)
		} else {
			_, err = tg.db.ExecContext(ctx, mysqlRecordSQL, table, id, attempt, instance, run)
		}
		if err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// prepare migrates a database of engine (a fresh one on the shared
// server, or address when given: a private server's; on Citus, a schema
// of the test's own on the cluster) and adds the audit tables.
func prepare(t *testing.T, engine, address string) *target {
	t.Helper()
	if engine == citus {
		return prepareCitus(t)
	}
	switch {
	case engine == mysqlEng && address == "":
		address = mytest.DSN(t)
	case address == "":
		address = pgtest.URL(t)
	case engine == postgres:
		address = pgtest.Route(t, address)
	}
	ctx := context.Background()
	m, err := migrate.Open(address, migrations(engine))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	tg := &target{engine: engine, address: address}
	if engine == postgres {
		tg.pool, err = pgxpool.New(ctx, address)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tg.pool.Close)
		if _, err := tg.pool.Exec(ctx, audit); err != nil {
			t.Fatal(err)
		}
		return tg.on()
	}
	parsed, err := dburl.Parse(address)
	if err != nil {
		t.Fatal(err)
	}
	if tg.db, err = parsed.Open(); err != nil {
		t.Fatal(err)
	}
	// database/sql keeps two idle connections by default: the workers'
	// claims, handlers and completions would open and close connections
	// all the time.
	tg.db.SetMaxIdleConns(64)
	t.Cleanup(func() { tg.db.Close() })
	for _, stmt := range mysqlAudit {
		if _, err := tg.db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	return tg.on()
}

// counts are a scenario's outcome for one queue table.
type counts struct {
	pushed, completed, dead, left int
	// double counts jobs completed (deleted) more than once; unhandled
	// jobs completed without a handler run that returned success; twice
	// jobs whose handler returned success more than once.
	double, unhandled, twice int
	// unacked counts jobs whose push committed though its reply was lost
	// (tallyAcked); they are in pushed.
	unacked int
}

func (c counts) lost() int { return c.pushed - c.completed - c.dead - c.left }

// tally counts what became of the jobs of table.
func tally(t *testing.T, tg *target, table string, pushed int) counts {
	t.Helper()
	c := counts{pushed: pushed}
	tg.collectAudit(t)
	q := func(sql string, args ...any) int { return tg.count(t, sql, args...) }
	c.completed = q("SELECT count(DISTINCT job_id) FROM completed_log WHERE queue = ?", table)
	c.double = q("SELECT count(*) - count(DISTINCT job_id) FROM completed_log WHERE queue = ?", table)
	c.dead = q("SELECT count(*) FROM " + table + " WHERE state = 'dead'")
	c.left = q("SELECT count(*) FROM " + table + " WHERE state <> 'dead'")
	c.unhandled = q(`SELECT count(DISTINCT job_id) FROM completed_log c
WHERE c.queue = ? AND NOT EXISTS (SELECT 1 FROM handled h WHERE h.queue = c.queue AND h.job_id = c.job_id)`, table)
	c.twice = q("SELECT count(*) FROM (SELECT job_id FROM handled WHERE queue = ? GROUP BY job_id HAVING count(*) > 1) AS x", table)
	return c
}

// tallyAcked is tally for a scenario whose pushes can fail ambiguously:
// every acknowledged id must be completed, dead or left, and a job the
// database holds beyond those is a push whose reply was lost, counted as
// pushed (and as unacked) rather than as a surplus that hides a loss.
// (PostgreSQL: the ids are passed as an array.)
func tallyAcked(t *testing.T, tg *target, table string, acked []int64) counts {
	t.Helper()
	c := tally(t, tg, table, len(acked))
	var missing int
	err := tg.pool.QueryRow(context.Background(), `SELECT count(*) FROM unnest($1::bigint[]) AS a(id)
WHERE NOT EXISTS (SELECT 1 FROM completed_log l WHERE l.queue = $2 AND l.job_id = a.id)
  AND NOT EXISTS (SELECT 1 FROM `+table+` j WHERE j.id = a.id)`, acked, table).Scan(&missing)
	if err != nil {
		t.Fatal(err)
	}
	c.unacked = c.completed + c.dead + c.left - (len(acked) - missing)
	c.pushed += c.unacked
	return c
}

// delivery is what a scenario may allow of a job's successful handler
// runs.
type delivery int

const (
	// exactlyOnce: no holder dies and no lease can run out, so a job whose
	// handler returned success is never handled again; transaction mode
	// always.
	exactlyOnce delivery = iota
	// atLeastOnce: holders die or the database is away longer than a
	// lease, so a successful run may be repeated (lease mode's guarantee).
	atLeastOnce
)

// check requires, per job, that nothing is lost, left unfinished,
// completed twice or completed without a successful handler run, and
// (exactlyOnce) no successful run repeated; it prints the scenario's line,
// with what the scenario did (detail) when it says.
func check(t *testing.T, tg *target, scenario string, c counts, d delivery, detail ...string) {
	t.Helper()
	rule := "exactly once"
	if d == atLeastOnce {
		rule = "lease mode: at least once"
	}
	scenario += tg.label()
	if pgtest.ViaPgBouncer() {
		scenario += " (through PgBouncer)"
	}
	if len(detail) > 0 {
		rule += "; " + strings.Join(detail, ", ")
	}
	unacked := ""
	if c.unacked != 0 {
		unacked = fmt.Sprintf(" (%d unacknowledged)", c.unacked)
	}
	line := fmt.Sprintf("reliability %s: %d pushed%s, %d completed, %d dead, %d lost, %d completed twice, %d completed unhandled, %d handled twice (%s)",
		scenario, c.pushed, unacked, c.completed, c.dead, c.lost(), c.double, c.unhandled, c.twice, rule)
	reportMu.Lock()
	report = append(report, line)
	reportMu.Unlock()
	t.Log(line)
	if c.lost() != 0 || c.double != 0 || c.left != 0 || c.unhandled != 0 {
		t.Errorf("%s: %d left unfinished, %d lost, %d completed twice, %d completed without a successful handler run", scenario, c.left, c.lost(), c.double, c.unhandled)
	}
	if d == exactlyOnce && c.twice != 0 {
		t.Errorf("%s: %d jobs handled successfully more than once, though no holder died and no lease could run out (a finished job's result was lost?)%s", scenario, c.twice, reclaims(t, tg))
	}
}

// reclaims says how the jobs of queue work handled more than once came
// to be claimed again: how many claims took a job whose lease had run
// out by the database's clock (a holder too slow to finish within its
// lease), and how many took one whose lease had not (a double claim).
func reclaims(t *testing.T, tg *target) string {
	t.Helper()
	tg.collectAudit(t)
	twice := `job_id IN (SELECT job_id FROM handled WHERE queue = 'work_queue' GROUP BY job_id HAVING count(*) > 1)`
	expired := tg.count(t, "SELECT count(*) FROM reclaimed WHERE queue = 'work_queue' AND lease_until < at AND "+twice)
	early := tg.count(t, "SELECT count(*) FROM reclaimed WHERE queue = 'work_queue' AND NOT (lease_until < at) AND "+twice)
	return fmt.Sprintf("; of their claims from a holder, %d came after its lease ran out, %d before", expired, early)
}

// waitFinished waits until table holds no unfinished job.
func waitFinished(t *testing.T, tg *target, table string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left, err := tg.queryInt(context.Background(), "SELECT count(*) FROM "+table+" WHERE state <> 'dead'")
		if err == nil && left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs of %s still unfinished after %s (%v)", left, table, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
