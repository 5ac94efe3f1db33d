package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queuegen/queuegen/internal/dburl"
)

// TestFailuresInJobsAndStats: jobs --json returns each error with its
// time and attempt (null for errors recorded before the failures column,
// the stack of a panic apart), an operator's cancel records its own, and
// stats counts the errors of the last hour over those plus the jobs that
// succeeded in it, on each engine. It catches a cancel that records no
// time (or the wrong attempt), errors paired with the wrong times, a
// window that counts older failures or none, and a rate divided by the
// wrong count.
func TestFailuresInJobsAndStats(t *testing.T) {
	eachOpsEngine(t, func(t *testing.T, d *opsDB) {
		at := func(ago time.Duration) string {
			return time.Now().UTC().Add(-ago).Format("2006-01-02T15:04:05.000000Z")
		}
		panicText := "panic: boom\ngoroutine 9 [running]:\nmain.work()\n\t/app/main.go:7 +0x1d\n"
		errs := `["from before", "smtp: 451", "` + strings.ReplaceAll(strings.ReplaceAll(panicText, "\n", `\n`), "\t", `\t`) + `"]`
		if d.pg() {
			errs = `{"from before","smtp: 451","` + strings.ReplaceAll(panicText, `"`, `\"`) + `"}`
		}
		failures := `[{"at": "` + at(2*time.Hour) + `", "attempt": 2, "error": 1}, {"at": "` + at(10*time.Minute) + `", "attempt": 3, "error": 2}]`
		id := d.insert(t, `INSERT INTO email_queue (recipient, max_attempts, state, attempt, errors, failures, created_at, run_after)
VALUES ('timed', 9, 'available', 3, ?, ?, {now}, {now} + INTERVAL '1' HOUR)`, errs, failures)
		d.exec(t, `INSERT INTO email_queue (recipient, max_attempts, state, attempt, finished_at, created_at, run_after)
VALUES ('done', 3, 'succeeded', 1, {now}, {now}, {now}), ('done', 3, 'succeeded', 1, {now} - INTERVAL '2' HOUR, {now}, {now})`)

		code, out, stderr := run(t, "cancel", "--db", d.url, "--queue", "email", "--id", itoa(id))
		if code != 0 {
			t.Fatalf("cancel = %d: %s%s", code, out, stderr)
		}
		code, out, stderr = run(t, "jobs", "--db", d.url, "--queue", "email", "--id", itoa(id), "--json")
		var job struct {
			Errors   []string `json:"errors"`
			Failures []struct {
				At      *time.Time `json:"at"`
				Attempt *int32     `json:"attempt"`
				Error   string     `json:"error"`
				Stack   string     `json:"stack"`
			} `json:"failures"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &job) != nil {
			t.Fatalf("jobs --id --json = %d:\n%s%s", code, out, stderr)
		}
		f := job.Failures
		if len(f) != 4 || len(job.Errors) != 4 {
			t.Fatalf("failures %+v of errors %q, want 4 of 4", f, job.Errors)
		}
		near := func(got *time.Time, want time.Time) bool {
			return got != nil && got.Sub(want).Abs() < 5*time.Second
		}
		attempt := func(a *int32) int32 {
			if a == nil {
				return -1
			}
			return *a
		}
		if f[0].At != nil || f[0].Attempt != nil || f[0].Error != "from before" {
			t.Errorf("the error from before the column: %+v", f[0])
		}
		if !near(f[1].At, time.Now().Add(-2*time.Hour)) || attempt(f[1].Attempt) != 2 || f[1].Error != "smtp: 451" {
			t.Errorf("failure 2: %+v", f[1])
		}
		if !near(f[2].At, time.Now().Add(-10*time.Minute)) || attempt(f[2].Attempt) != 3 || f[2].Error != "panic: boom" ||
			!strings.HasPrefix(f[2].Stack, "goroutine 9 [running]:") {
			t.Errorf("failure 3: %+v", f[2])
		}
		if !near(f[3].At, time.Now()) || attempt(f[3].Attempt) != 3 || f[3].Error != "cancelled by an operator" {
			t.Errorf("the cancel: %+v", f[3])
		}

		// The hour: the panic and the cancel (not the failure of two hours
		// ago), and the job that succeeded in it (not the one before).
		code, out, stderr = d.run(t, "stats", "--db", d.url, "--json")
		var stats []struct {
			Queue     string   `json:"queue"`
			Failures  *int64   `json:"failures_last_hour"`
			Succeeded *int64   `json:"succeeded_last_hour"`
			Rate      *float64 `json:"failure_rate_last_hour"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &stats) != nil {
			t.Fatalf("stats --json = %d:\n%s%s", code, out, stderr)
		}
		for _, s := range stats {
			if s.Queue != "email" {
				continue
			}
			if s.Failures == nil || *s.Failures != 2 || s.Succeeded == nil || *s.Succeeded != 1 || s.Rate == nil || *s.Rate < 0.66 || *s.Rate > 0.67 {
				t.Errorf("email's hour: %s", out)
			}
		}
		code, out, _ = d.run(t, "stats", "--db", d.url)
		if code != 0 || !strings.Contains(out, "67% of 3") {
			t.Errorf("stats: want email's 67%% of 3:\n%s", out)
		}
	})
}

// TestFailuresBeforeTheMigration: against a table whose migration adding
// the failures column is not applied yet, the commands work as before:
// jobs --json gives each error with its time unknown, cancel records its
// error alone, and stats leaves the hour unsaid ("-", null). It catches a
// command that names the column unconditionally and so fails on every
// database not yet migrated.
func TestFailuresBeforeTheMigration(t *testing.T) {
	eachOpsEngine(t, func(t *testing.T, d *opsDB) {
		table := "email_queue"
		if d.engine == dburl.PostgreSQL {
			table = "base_queue" // email_queue inherits the column (a distributed queue, on Citus, has it of its own)
		}
		d.exec(t, "ALTER TABLE "+table+" DROP COLUMN failures")
		bad := d.one(t, "SELECT MIN(id) FROM email_queue WHERE state = 'dead'")
		code, out, stderr := run(t, "jobs", "--db", d.url, "--queue", "email", "--id", itoa(bad), "--json")
		var job struct {
			Failures []struct {
				At    *time.Time `json:"at"`
				Error string     `json:"error"`
			} `json:"failures"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &job) != nil || len(job.Failures) != 3 || job.Failures[0].At != nil || job.Failures[2].Error != "smtp: 550 no such user" {
			t.Errorf("jobs --json on a table without failures = %d:\n%s%s", code, out, stderr)
		}
		flaky := d.one(t, "SELECT id FROM email_queue WHERE recipient = 'flaky'")
		if code, out, stderr := run(t, "cancel", "--db", d.url, "--queue", "email", "--id", itoa(flaky)); code != 0 {
			t.Errorf("cancel on a table without failures = %d: %s%s", code, out, stderr)
		}
		if errs := d.errorsOf(t, "email_queue", flaky); len(errs) != 2 || errs[1] != "cancelled by an operator" {
			t.Errorf("cancelled job's errors %q", errs)
		}
		code, out, stderr = d.run(t, "stats", "--db", d.url, "--json")
		if code != 0 || !strings.Contains(out, `"failures_last_hour": null`) {
			t.Errorf("stats --json on a table without failures = %d:\n%s%s", code, out, stderr)
		}
		code, out, _ = d.run(t, "stats", "--db", d.url)
		if code != 0 || !regexp.MustCompile(`(?m)^\s*email\s.*\s-\s*$`).MatchString(out) {
			t.Errorf("stats on a table without failures = %d:\n%s", code, out)
		}
	})
}
