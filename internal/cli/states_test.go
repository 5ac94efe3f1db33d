package cli_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/dbtest"
)

// TestHeldJobIsRunningEverywhere: a job a transaction-mode worker holds
// (its claiming transaction open, the row locked and its attempt counted
// but not committed) is running in every command, as the README's states
// say: stats counts it running, jobs --state running lists it, jobs
// --state available does not, the full list and jobs --id show it
// running (with --json, "held": true). Once the transaction ends it is
// available again everywhere.
func TestHeldJobIsRunningEverywhere(t *testing.T) {
	// Not on Citus (dbtest.AndCitus): a distributed queue has no
	// transaction mode, so no worker holds a job by its transaction there.
	eachOpsEngineOf(t, dbtest.Engines, func(t *testing.T, d *opsDB) {
		ctx := context.Background()
		table := d.txQueue + "_queue"
		push := `INSERT INTO ` + table + ` (payload, max_attempts, created_at, run_after) VALUES (?, 3, {now}, {now})`
		// The held job is the newer: a page of one available job must
		// pass over it to the free one.
		free := d.insert(t, push, `{"report_id": 1}`)
		held := d.insert(t, push, `{"report_id": 2}`)
		tx, err := d.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		// What a transaction-mode claim does: lock the row, count the attempt.
		if _, err := tx.Exec(d.sql("UPDATE "+table+" SET attempt = attempt + 1, attempted_at = {now} WHERE id = ?"), held); err != nil {
			t.Fatal(err)
		}
		row := func(id int64, state string) *regexp.Regexp {
			return regexp.MustCompile(`(?m)^` + itoa(id) + `\s+` + state + `\s+0/3\s`)
		}
		q := []string{"--db", d.url, "--queue", d.txQueue}
		for _, c := range []struct {
			args     []string
			want     []*regexp.Regexp
			wantText []string
			not      []*regexp.Regexp
		}{
			{[]string{"jobs", "--state", "running"}, []*regexp.Regexp{row(held, "running")}, []string{"1 job of queue " + d.txQueue + " (state running)"}, []*regexp.Regexp{row(free, `\S+`)}},
			{[]string{"jobs", "--state", "available"}, []*regexp.Regexp{row(free, "available")}, []string{"1 job of queue"}, []*regexp.Regexp{row(held, `\S+`)}},
			{[]string{"jobs", "--state", "available", "--limit", "1"}, []*regexp.Regexp{row(free, "available")}, []string{"1 job of queue"}, []*regexp.Regexp{row(held, `\S+`)}},
			{[]string{"jobs"}, []*regexp.Regexp{row(held, "running"), row(free, "available")}, []string{"2 jobs of queue"}, nil},
			{[]string{"jobs", "--state", "failed"}, nil, []string{"0 jobs of queue"}, []*regexp.Regexp{row(held, `\S+`)}},
			{[]string{"jobs", "--id", itoa(held)}, nil, []string{"  state         running\n", "  attempt       0 of 3\n",
				"  held          by a transaction in progress (a transaction-mode worker working it)"}, nil},
			{[]string{"jobs", "--id", itoa(free)}, nil, []string{"  state         available\n"}, []*regexp.Regexp{regexp.MustCompile(`held`)}},
		} {
			code, out, errs := run(t, append(c.args, q...)...)
			bad := code != 0
			for _, re := range c.want {
				bad = bad || !re.MatchString(out)
			}
			for _, s := range c.wantText {
				bad = bad || !strings.Contains(out, s)
			}
			for _, re := range c.not {
				bad = bad || re.MatchString(out)
			}
			if bad {
				t.Errorf("%v with job %d held = %d:\n%s%s", c.args, held, code, out, errs)
			}
		}
		var job map[string]any
		code, out, _ := run(t, append([]string{"jobs", "--id", itoa(held), "--json"}, q...)...)
		if code != 0 || json.Unmarshal([]byte(out), &job) != nil || job["state"] != "running" || job["held"] != true || job["attempt"] != 0.0 {
			t.Errorf("jobs --id --json of the held job = %d:\n%s", code, out)
		}
		var stats []map[string]any
		code, out, _ = d.run(t, "stats", "--db", d.url, "--json")
		json.Unmarshal([]byte(out), &stats)
		i := slices.IndexFunc(stats, func(s map[string]any) bool { return s["queue"] == d.txQueue })
		if code != 0 || i < 0 || stats[i]["ready"] != 1.0 || stats[i]["running"] != 1.0 {
			t.Errorf("stats --json with job %d held = %d:\n%s", held, code, out)
		}

		// The transaction ends (a rollback): the job is available again.
		tx.Rollback()
		code, out, _ = run(t, append([]string{"jobs", "--state", "available"}, q...)...)
		if code != 0 || !row(held, "available").MatchString(out) || !row(free, "available").MatchString(out) {
			t.Errorf("jobs --state available once the transaction ended = %d:\n%s", code, out)
		}
		code, out, _ = run(t, append([]string{"jobs", "--id", itoa(held), "--json"}, q...)...)
		if code != 0 || json.Unmarshal([]byte(out), &job) != nil || job["state"] != "available" || job["held"] != false {
			t.Errorf("jobs --id --json once the transaction ended = %d:\n%s", code, out)
		}
	})
}

// TestRetryAppliesToFailedAndFinishedJobs: retry --id of a job that never
// failed (due now, or scheduled) refuses, says why and changes nothing,
// as retry --state available and --state scheduled are usage errors; a
// retrying job (failed, waiting out its backoff) is made due now.
func TestRetryAppliesToFailedAndFinishedJobs(t *testing.T) {
	eachOpsEngine(t, func(t *testing.T, d *opsDB) {
		ready := d.one(t, "SELECT min(id) FROM email_queue WHERE recipient = 'ready'")
		later := d.one(t, "SELECT id FROM email_queue WHERE recipient = 'later'")
		flaky := d.one(t, "SELECT id FROM email_queue WHERE recipient = 'flaky'")
		backoff := d.insert(t, "INSERT INTO email_queue (recipient, max_attempts, attempt, errors, created_at, run_after) VALUES ('backoff', 3, 1, "+
			map[string]string{"postgresql": "'{\"timeout\"}'", "mysql": "JSON_ARRAY('timeout')"}[d.dialect()]+", {now}, {now} + INTERVAL '1' HOUR)")
		for _, c := range []struct {
			id   int64
			want string
		}{
			{ready, "is available (due now: it runs as soon as a worker is free); retry applies to retrying, dead and succeeded jobs"},
			{flaky, "is available (due now: it runs as soon as a worker is free)"},
			{later, "is scheduled (not yet due, and it has never failed); retry applies to retrying, dead and succeeded jobs"},
		} {
			before := d.one(t, "SELECT count(*) FROM email_queue WHERE id = ? AND run_after <= {now}", c.id)
			code, out, errs := run(t, "retry", "--db", d.url, "--queue", "email", "--id", itoa(c.id))
			if code != 1 || out != "" || !strings.Contains(errs, "job "+itoa(c.id)+" of queue email "+c.want) {
				t.Errorf("retry --id %d = %d:\n%s%s", c.id, code, out, errs)
			}
			if after := d.one(t, "SELECT count(*) FROM email_queue WHERE id = ? AND run_after <= {now}", c.id); after != before {
				t.Errorf("retry --id %d that did not apply changed the job's run_after", c.id)
			}
		}
		code, out, errs := run(t, "retry", "--db", d.url, "--queue", "email", "--id", itoa(backoff))
		if code != 0 || out != "retried 1 job of queue email: "+itoa(backoff)+"\n" || d.one(t, "SELECT count(*) FROM email_queue WHERE id = ? AND run_after <= {now}", backoff) != 1 {
			t.Errorf("retry --id of a retrying job = %d:\n%s%s", code, out, errs)
		}
		// --state failed: the dead jobs (flaky is due already).
		code, out, errs = run(t, "retry", "--db", d.url, "--queue", "email", "--state", "failed", "--yes")
		if code != 0 || !strings.HasPrefix(out, "retried 2 jobs of queue email: ") || strings.Contains(out, itoa(flaky)) {
			t.Errorf("retry --state failed = %d:\n%s%s", code, out, errs)
		}
	})
}

// TestJSONKeysAlwaysThere: --json writes every key the README's table
// lists, null where there is no value and [] where a list is empty.
func TestJSONKeysAlwaysThere(t *testing.T) {
	eachOpsEngine(t, func(t *testing.T, d *opsDB) {
		jobKeys := []string{"id", "state", "attempt", "max_attempts", "priority", "run_after", "created_at", "attempted_at", "finished_at",
			"locked_by", "locked_until", "unique_key", "held", "errors", "payload", "row_state"}
		ready := d.one(t, "SELECT min(id) FROM email_queue WHERE recipient = 'ready'")
		var job map[string]any
		code, out, _ := run(t, "jobs", "--db", d.url, "--queue", "email", "--id", itoa(ready), "--json")
		if code != 0 || json.Unmarshal([]byte(out), &job) != nil {
			t.Fatalf("jobs --id --json = %d:\n%s", code, out)
		}
		for _, k := range jobKeys {
			if _, ok := job[k]; !ok {
				t.Errorf("jobs --id --json lacks %q:\n%s", k, out)
			}
		}
		if job["attempted_at"] != nil || job["unique_key"] != nil || job["locked_by"] != nil {
			t.Errorf("jobs --id --json of a job never attempted: want null attempted_at, unique_key, locked_by:\n%s", out)
		}
		if errs, ok := job["errors"].([]any); !ok || len(errs) != 0 {
			t.Errorf("jobs --id --json: errors = %v, want []", job["errors"])
		}
		var jobs []map[string]any
		code, out, _ = run(t, "jobs", "--db", d.url, "--queue", "email", "--json")
		if code != 0 || json.Unmarshal([]byte(out), &jobs) != nil || len(jobs) == 0 {
			t.Fatalf("jobs --json = %d:\n%s", code, out)
		}
		for _, j := range jobs {
			for _, k := range jobKeys {
				if _, ok := j[k]; !ok {
					t.Errorf("jobs --json: job %v lacks %q", j["id"], k)
				}
			}
		}
		var stats []map[string]any
		code, out, _ = d.run(t, "stats", "--db", d.url, "--json")
		if code != 0 || json.Unmarshal([]byte(out), &stats) != nil || len(stats) == 0 {
			t.Fatalf("stats --json = %d:\n%s", code, out)
		}
		for _, k := range []string{"queue", "base_table", "paused", "ready", "scheduled", "retrying", "running", "expired", "succeeded", "dead",
			"oldest_ready_age_seconds", "claims_per_second", "estimated", "oldest_unknown"} {
			if _, ok := stats[0][k]; !ok {
				t.Errorf("stats --json lacks %q:\n%s", k, out)
			}
		}
		dead := d.one(t, "SELECT min(id) FROM email_queue WHERE state = 'dead'")
		var res map[string]any
		code, out, _ = run(t, "retry", "--db", d.url, "--queue", "email", "--id", itoa(dead), "--json")
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("retry --json = %d:\n%s", code, out)
		}
		for _, k := range []string{"locked", "conflicts"} {
			if l, ok := res[k].([]any); !ok || len(l) != 0 {
				t.Errorf("retry --json: %s = %v, want []:\n%s", k, res[k], out)
			}
		}
	})
}

// TestStatsOfAnEmptyQueue: a queue with no ready job shows - for the
// oldest ready job's age, not 0s.
func TestStatsOfAnEmptyQueue(t *testing.T) {
	eachOpsEngine(t, func(t *testing.T, d *opsDB) {
		for _, exact := range []bool{false, true} {
			args := []string{"stats", "--db", d.url}
			if exact {
				args = append(args, "--exact")
			}
			code, out, errs := d.run(t, args...)
			if code != 0 || !regexp.MustCompile(`(?m)^\s*`+d.txQueue+`\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+-\s+0\.00\s+(none|0 failures)\s*$`).MatchString(out) ||
				!regexp.MustCompile(`(?m)^\s*email\s+4\s+1\s+0\s+1\s+0\s+0\s+2\s+\d+(\.\d+)?m?s\s`).MatchString(out) {
				t.Errorf("%v = %d:\n%s%s", args, code, out, errs)
			}
		}
	})
}
