package cli_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuegen/queuegen/internal/engine/postgres"
	"github.com/queuegen/queuegen/internal/pgtest"
)

// seeded migrates the e2e spec's queues into a fresh database and seeds
// queue email with jobs in every state.
func seeded(t *testing.T) (url string, conn *pgx.Conn) {
	t.Helper()
	url = pgtest.URL(t)
	if code, out, errs := run(t, "migrate", "up", "--db", url, "-f", "../e2e/queuegen.yaml"); code != 0 {
		t.Fatalf("migrate: %s%s", out, errs)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	_, err = conn.Exec(ctx, `
INSERT INTO email_queue (recipient, max_attempts) SELECT 'ready', 3 FROM generate_series(1, 3);
INSERT INTO email_queue (recipient, max_attempts, run_after) VALUES ('later', 3, now() + interval '1 hour');
INSERT INTO email_queue (recipient, max_attempts, state, attempt, locked_by, locked_until, attempted_at)
    VALUES ('busy', 3, 'running', 1, 'node-1', now() + interval '1 minute', now());
INSERT INTO email_queue (recipient, max_attempts, attempt, errors) VALUES ('flaky', 3, 1, '{"timeout"}');
INSERT INTO email_queue (recipient, max_attempts, state, attempt, errors, finished_at)
    SELECT 'bad', 3, 'dead', 3, '{"a","b","smtp: 550 no such user"}', now() FROM generate_series(1, 2);`)
	if err != nil {
		t.Fatal(err)
	}
	return url, conn
}

func TestStatsCommand(t *testing.T) {
	url, _ := seeded(t)
	code, out, errs := run(t, "stats", "--db", url)
	if code != 0 {
		t.Fatalf("stats = %d: %s", code, errs)
	}
	// QUEUE READY SCHEDULED RETRYING RUNNING SUCCEEDED DEAD OLDEST CLAIMS/S
	// (the failed job is due again, so it is ready)
	if !regexp.MustCompile(`(?m)^\s*email\s+4\s+1\s+0\s+1\s+0\s+2\s+\S+\s+0\.02\s*$`).MatchString(out) {
		t.Errorf("stats table:\n%s", out)
	}
	if !strings.Contains(out, "webhook") || !strings.Contains(out, "CLAIMS/S") {
		t.Errorf("stats lacks a queue or the header:\n%s", out)
	}
	// With the spec, a last row counts every inheriting queue through
	// the base table.
	code, out, _ = run(t, "stats", "--db", url, "-f", "../e2e/queuegen.yaml")
	if code != 0 || !regexp.MustCompile(`(?m)^\s*\* \(base_queue\)\s+4\s+1\s+0\s+1\s+0\s+2\s`).MatchString(out) {
		t.Errorf("stats with the spec:\n%s", out)
	}
	code, out, _ = run(t, "stats", "--db", url, "--json")
	var stats []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &stats) != nil || len(stats) != 10 {
		t.Fatalf("stats --json = %d:\n%s", code, out)
	}
	for _, s := range stats {
		if s["queue"] == "email" && (s["ready"] != 4.0 || s["dead"] != 2.0 || s["running"] != 1.0) {
			t.Errorf("email stats = %v", s)
		}
	}
}

func TestJobsRetryCancelPurgePause(t *testing.T) {
	url, conn := seeded(t)
	ctx := context.Background()
	code, out, _ := run(t, "jobs", "--db", url, "--queue", "email", "--state", "dead")
	if code != 0 || strings.Count(out, "smtp: 550 no such user") != 2 || !strings.Contains(out, "3/3") || !strings.Contains(out, "2 jobs of queue email (state dead)") {
		t.Errorf("jobs --state dead = %d:\n%s", code, out)
	}
	if code, out, _ := run(t, "jobs", "--db", url, "--queue", "email", "--state", "failed"); code != 0 || !strings.Contains(out, "timeout") || !strings.Contains(out, "3 jobs") {
		t.Errorf("jobs --state failed = %d:\n%s", code, out)
	}
	if code, _, errs := run(t, "jobs", "--db", url, "--queue", "nope"); code != 1 || !strings.Contains(errs, `no queue "nope"`) {
		t.Errorf("jobs of an unknown queue = %d, %q", code, errs)
	}

	// More than one job needs --yes; nothing changes without it.
	code, out, _ = run(t, "retry", "--db", url, "--queue", "email", "--state", "dead")
	if code != 1 || !strings.Contains(out, "2 jobs of queue email match (state dead): nothing retried; pass --yes") {
		t.Errorf("retry without --yes = %d:\n%s", code, out)
	}
	if n := countRows(t, conn, "SELECT count(*) FROM email_queue WHERE state = 'dead'"); n != 2 {
		t.Fatalf("retry without --yes changed something: %d dead", n)
	}
	code, out, _ = run(t, "retry", "--db", url, "--queue", "email", "--state", "dead", "--yes")
	if code != 0 || !strings.Contains(out, "retried 2 jobs of queue email: ") {
		t.Errorf("retry --yes = %d:\n%s", code, out)
	}
	if n := countRows(t, conn, "SELECT count(*) FROM email_queue WHERE recipient = 'bad' AND state = 'available' AND max_attempts = 4"); n != 2 {
		t.Errorf("retried jobs: %d available with an attempt left, want 2", n)
	}

	var busy int64
	conn.QueryRow(ctx, "SELECT id FROM email_queue WHERE recipient = 'busy'").Scan(&busy)
	code, out, _ = run(t, "cancel", "--db", url, "--queue", "email", "--id", itoa(busy))
	if code != 0 || out != "cancelled 1 job of queue email: "+itoa(busy)+"\n" {
		t.Errorf("cancel --id = %d:\n%q", code, out)
	}
	if n := countRows(t, conn, "SELECT count(*) FROM email_queue WHERE recipient = 'busy' AND state = 'dead' AND errors[1] = 'cancelled by an operator'"); n != 1 {
		t.Errorf("the cancelled job is not dead with the operator's error")
	}
	code, out, _ = run(t, "purge", "--db", url, "--queue", "email", "--state", "dead")
	if code != 0 || !strings.Contains(out, "purged 1 job of") {
		t.Errorf("purge of the one dead job = %d:\n%s", code, out)
	}

	if code, out, _ := run(t, "pause", "--db", url, "--queue", "email"); code != 0 || !strings.Contains(out, "queue email paused") {
		t.Errorf("pause = %d: %s", code, out)
	}
	if n := countRows(t, conn, "SELECT count(*) FROM queuegen_queues WHERE name = 'email' AND paused"); n != 1 {
		t.Errorf("pause did not persist")
	}
	if _, out, _ := run(t, "stats", "--db", url); !strings.Contains(out, "email (paused)") {
		t.Errorf("stats does not show the pause:\n%s", out)
	}
	if code, _, _ := run(t, "resume", "--db", url, "--queue", "email"); code != 0 || countRows(t, conn, "SELECT count(*) FROM queuegen_queues WHERE paused") != 0 {
		t.Errorf("resume = %d", code)
	}
}

func countRows(t *testing.T, conn *pgx.Conn, sql string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
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
	url, conn := seeded(t)
	ctx := context.Background()
	var heldDead, holder, olderTwin, newerTwin, free int64
	for _, row := range []struct {
		dst        *int64
		state, key string
	}{{&heldDead, "dead", "k1"}, {&holder, "available", "k1"}, {&olderTwin, "dead", "k2"}, {&newerTwin, "dead", "k2"}, {&free, "dead", ""}} {
		var key any
		if row.key != "" {
			key = row.key
		}
		if err := conn.QueryRow(ctx, `INSERT INTO email_queue (recipient, max_attempts, state, attempt, unique_key, finished_at)
			VALUES ('u', 1, $1, 1, $2, CASE WHEN $1 = 'dead' THEN now() END) RETURNING id`, row.state, key).Scan(row.dst); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "DELETE FROM email_queue WHERE recipient <> 'u'"); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "retry", "--db", url, "--queue", "email", "--state", "dead", "--yes")
	wantOut := "retried 2 jobs of queue email: " + itoa(newerTwin) + ", " + itoa(free) + "\n" +
		"not retried: job " + itoa(heldDead) + ", as job " + itoa(holder) + ` holds its unique key "k1" (retry job ` + itoa(heldDead) + " once that one finishes)\n" +
		"not retried: job " + itoa(olderTwin) + ", as job " + itoa(newerTwin) + ` holds its unique key "k2" (retry job ` + itoa(olderTwin) + " once that one finishes)\n"
	if code != 1 || out != wantOut || !strings.Contains(errs, "retried 2 of 4 matching jobs; 2 could not be retried") {
		t.Errorf("retry with conflicts = %d\n%s\nwant\n%s\nstderr %q", code, out, wantOut, errs)
	}
	if n := countRows(t, conn, "SELECT count(*) FROM email_queue WHERE state = 'available'"); n != 3 {
		t.Errorf("%d available after the retry, want the holder and the two retried", n)
	}
	if code, _, errs := run(t, "retry", "--db", url, "--queue", "email", "--id", "99999"); code != 1 || !strings.Contains(errs, "queue email has no job 99999") {
		t.Errorf("retry of a missing id = %d, %q", code, errs)
	}
	if code, _, errs := run(t, "cancel", "--db", url, "--queue", "email", "--id", itoa(heldDead)); code != 1 || !strings.Contains(errs, "is dead; cancel applies to available, running jobs") {
		t.Errorf("cancel of a dead job = %d, %q", code, errs)
	}
}

// TestOperationsDoNotWaitOnHeldJobs: a job a transaction-mode worker holds
// (its claiming transaction is open) counts as running, not ready, in stats
// and is left out of Depth; cancel, retry and purge skip it at once,
// name it, and fail, instead of waiting for the transaction.
func TestOperationsDoNotWaitOnHeldJobs(t *testing.T) {
	url, conn := seeded(t)
	ctx := context.Background()
	var held, free int64
	conn.QueryRow(ctx, `INSERT INTO report_queue (payload, max_attempts) VALUES ('{"report_id": 1}', 3) RETURNING id`).Scan(&held)
	conn.QueryRow(ctx, `INSERT INTO report_queue (payload, max_attempts) VALUES ('{"report_id": 2}', 3) RETURNING id`).Scan(&free)
	worker, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close(ctx)
	tx, err := worker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// What a transaction-mode claim does: lock the row, count the attempt.
	if _, err := tx.Exec(ctx, "UPDATE report_queue SET attempt = attempt + 1 WHERE id = $1", held); err != nil {
		t.Fatal(err)
	}

	code, out, _ := run(t, "stats", "--db", url, "--json")
	var stats []map[string]any
	json.Unmarshal([]byte(out), &stats)
	for _, s := range stats {
		if s["queue"] == "report" && (s["ready"] != 1.0 || s["running"] != 1.0) {
			t.Errorf("report stats with one job held = %v; want 1 ready, 1 running", s)
		}
	}
	if code != 0 {
		t.Errorf("stats = %d", code)
	}
	var depth int64
	conn.QueryRow(ctx, "SELECT count(*) FROM report_queue WHERE state = 'available' AND NOT ("+postgres.Held+")").Scan(&depth)
	if depth != 1 {
		t.Errorf("Depth's predicate counts %d, want the one free job", depth)
	}

	begin := time.Now()
	code, out, errs := run(t, "cancel", "--db", url, "--queue", "report", "--state", "available", "--yes")
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("cancel took %v: it waited on the held job", took)
	}
	if code != 1 || !strings.Contains(out, "cancelled 1 job of queue report: "+itoa(free)) ||
		!strings.Contains(out, "skipped 1 job that a transaction in progress holds") || !strings.Contains(errs, "1 could not be cancelled") {
		t.Errorf("cancel beside a held job = %d:\n%s%s", code, out, errs)
	}
	code, out, _ = run(t, "purge", "--db", url, "--queue", "report", "--id", itoa(held))
	if code != 1 || !strings.Contains(out, "purged 0 jobs") || !strings.Contains(out, ": "+itoa(held)+";") {
		t.Errorf("purge of the held job = %d:\n%s", code, out)
	}
	tx.Rollback(ctx)
	if code, out, errs := run(t, "purge", "--db", url, "--queue", "report", "--id", itoa(held)); code != 0 || !strings.Contains(out, "purged 1 job") {
		t.Errorf("purge once the transaction ended = %d:\n%s%s", code, out, errs)
	}
}
