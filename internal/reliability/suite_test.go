package reliability_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/internal/pgtest"
)

// long runs every scenario longer (more jobs, more chaos), for a run
// outside CI: go test ./internal/reliability -reliability.long
var long = flag.Bool("reliability.long", false, "run the fault scenarios longer")

func TestMain(m *testing.M) {
	code := pgtest.RunMain(m)
	reportMu.Lock()
	for _, line := range report {
		fmt.Println(line)
	}
	if path := os.Getenv("QUEUEGEN_RELIABILITY_REPORT"); path != "" && len(report) > 0 {
		os.WriteFile(path, []byte(strings.Join(report, "\n")+"\n"), 0o644)
	}
	reportMu.Unlock()
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

// audit is installed on every queue table of the suite: triggers log
// each completion (the row's delete) with its attempt, independently of
// the code under test.
const audit = `
CREATE TABLE handled (job_id bigint NOT NULL, attempt integer NOT NULL, instance text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE completed_log (queue text NOT NULL, job_id bigint NOT NULL, attempt integer NOT NULL);
CREATE FUNCTION log_completion() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO completed_log VALUES (TG_TABLE_NAME, OLD.id, OLD.attempt);
    RETURN OLD;
END $$;
CREATE TRIGGER work_completed AFTER DELETE ON work_queue FOR EACH ROW EXECUTE FUNCTION log_completion();
CREATE TRIGGER ledger_completed AFTER DELETE ON ledger_queue FOR EACH ROW EXECUTE FUNCTION log_completion();
CREATE TRIGGER event_completed AFTER DELETE ON event_queue FOR EACH ROW EXECUTE FUNCTION log_completion();`

// prepare migrates a database (a fresh one, or url when given) and adds
// the audit tables.
func prepare(t *testing.T, url string) (string, *pgxpool.Pool) {
	t.Helper()
	if url == "" {
		url = pgtest.URL(t)
	}
	ctx := context.Background()
	m, err := migrate.Open(url, "db/migrations")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, audit); err != nil {
		t.Fatal(err)
	}
	return url, pool
}

// counts are a scenario's outcome for one queue table.
type counts struct {
	pushed, completed, dead, left, double int
}

func (c counts) lost() int { return c.pushed - c.completed - c.dead - c.left }

// tally counts what became of the jobs of table.
func tally(t *testing.T, pool *pgxpool.Pool, table string, pushed int) counts {
	t.Helper()
	ctx := context.Background()
	c := counts{pushed: pushed}
	q := func(sql string, args ...any) int {
		var n int
		if err := pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	c.completed = q("SELECT count(DISTINCT job_id) FROM completed_log WHERE queue = $1", table)
	c.double = q("SELECT count(*) - count(DISTINCT job_id) FROM completed_log WHERE queue = $1", table)
	c.dead = q("SELECT count(*) FROM " + table + " WHERE state = 'dead'")
	c.left = q("SELECT count(*) FROM " + table + " WHERE state <> 'dead'")
	return c
}

// check requires nothing lost and nothing completed twice, and prints the
// scenario's line.
func check(t *testing.T, scenario string, c counts) {
	t.Helper()
	line := fmt.Sprintf("reliability %s: %d pushed, %d completed, %d dead, %d lost, %d completed twice", scenario, c.pushed, c.completed, c.dead, c.lost(), c.double)
	reportMu.Lock()
	report = append(report, line)
	reportMu.Unlock()
	t.Log(line)
	if c.lost() != 0 || c.double != 0 || c.left != 0 {
		t.Errorf("%s: %d left unfinished, %d lost, %d completed twice", scenario, c.left, c.lost(), c.double)
	}
}

// waitFinished waits until table holds no unfinished job.
func waitFinished(t *testing.T, pool *pgxpool.Pool, table string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var left int
		err := pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table+" WHERE state <> 'dead'").Scan(&left)
		if err == nil && left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs of %s still unfinished after %s (%v)", left, table, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
