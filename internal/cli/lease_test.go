package cli_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
)

// TestDelayedAndExpiredJobsEverywhere: a job pushed with a delay is
// scheduled in jobs (its list, --state scheduled, --id, --json) as stats
// counts it; a running job whose lease expired is expired in jobs and
// counted apart from the running ones in stats (and its row state is
// still running, in --json's row_state).
func TestDelayedAndExpiredJobsEverywhere(t *testing.T) {
	eachOpsEngine(t, func(t *testing.T, d *opsDB) {
		delayed := d.insert(t, "INSERT INTO email_queue (recipient, max_attempts, created_at, run_after) VALUES ('delayed', 3, {now}, {now} + INTERVAL '1' HOUR)")
		gone := d.insert(t, `INSERT INTO email_queue (recipient, max_attempts, state, attempt, locked_by, locked_until, attempted_at, created_at, run_after)
VALUES ('gone', 3, 'running', 1, 'node-gone', {now} - INTERVAL '20' MINUTE, {now} - INTERVAL '21' MINUTE, {now}, {now})`)
		busy := d.one(t, "SELECT id FROM email_queue WHERE recipient = 'busy'")
		row := func(id int64, state string) *regexp.Regexp {
			return regexp.MustCompile(`(?m)^` + itoa(id) + `\s+` + state + `\s`)
		}
		q := []string{"--db", d.url, "--queue", "email"}
		for _, c := range []struct {
			args      []string
			want, not []*regexp.Regexp
		}{
			{[]string{"jobs"}, []*regexp.Regexp{row(delayed, "scheduled"), row(gone, "expired"), row(busy, "running")}, []*regexp.Regexp{row(delayed, "available")}},
			{[]string{"jobs", "--state", "scheduled"}, []*regexp.Regexp{row(delayed, "scheduled")}, []*regexp.Regexp{row(gone, `\S+`)}},
			{[]string{"jobs", "--state", "available"}, nil, []*regexp.Regexp{row(delayed, `\S+`), row(gone, `\S+`)}},
			{[]string{"jobs", "--state", "expired"}, []*regexp.Regexp{row(gone, "expired")}, []*regexp.Regexp{row(busy, `\S+`), row(delayed, `\S+`)}},
			{[]string{"jobs", "--state", "running"}, []*regexp.Regexp{row(busy, "running")}, []*regexp.Regexp{row(gone, `\S+`)}},
			{[]string{"jobs", "--id", itoa(delayed)}, []*regexp.Regexp{regexp.MustCompile(`(?m)^  state\s+scheduled$`)}, nil},
			{[]string{"jobs", "--id", itoa(gone)}, []*regexp.Regexp{regexp.MustCompile(`(?m)^  state\s+expired$`)}, nil},
		} {
			code, out, errs := run(t, append(c.args, q...)...)
			bad := code != 0
			for _, re := range c.want {
				bad = bad || !re.MatchString(out)
			}
			for _, re := range c.not {
				bad = bad || re.MatchString(out)
			}
			if bad {
				t.Errorf("%v = %d:\n%s%s", c.args, code, out, errs)
			}
		}
		var jobs []map[string]any
		code, out, _ := run(t, append([]string{"jobs", "--json"}, q...)...)
		if code != 0 || json.Unmarshal([]byte(out), &jobs) != nil {
			t.Fatalf("jobs --json = %d:\n%s", code, out)
		}
		for _, j := range jobs {
			id := int64(j["id"].(float64))
			want := map[int64][2]string{delayed: {"scheduled", "available"}, gone: {"expired", "running"}, busy: {"running", "running"}}
			if w, ok := want[id]; ok && (j["state"] != w[0] || j["row_state"] != w[1]) {
				t.Errorf("jobs --json: job %d has state %v, row_state %v; want %s, %s", id, j["state"], j["row_state"], w[0], w[1])
			}
		}
		// stats: 2 scheduled (the seeded one and this), 1 running, 1 expired,
		// in the table and in --json; the list's counts agree.
		code, out, errs := d.run(t, "stats", "--db", d.url, "--exact")
		if code != 0 || !strings.Contains(out, "EXPIRED") || !regexp.MustCompile(`(?m)^\s*email\s+4\s+2\s+0\s+1\s+1\s+0\s+2\s`).MatchString(out) {
			t.Errorf("stats = %d:\n%s%s", code, out, errs)
		}
		var stats []map[string]any
		code, out, _ = d.run(t, "stats", "--db", d.url, "--json")
		json.Unmarshal([]byte(out), &stats)
		i := slices.IndexFunc(stats, func(s map[string]any) bool { return s["queue"] == "email" })
		if code != 0 || i < 0 || stats[i]["scheduled"] != 2.0 || stats[i]["running"] != 1.0 || stats[i]["expired"] != 1.0 {
			t.Errorf("stats --json = %d:\n%s", code, out)
		}
		for state, want := range map[string]int{"scheduled": 2, "running": 1, "expired": 1} {
			_, out, _ := run(t, append([]string{"jobs", "--state", state}, q...)...)
			if !strings.Contains(out, strconv.Itoa(want)+" job") {
				t.Errorf("jobs --state %s lists other than the %d stats counts:\n%s", state, want, out)
			}
		}
		// Cancel applies to an expired job, as to a running one.
		if code, out, errs := run(t, "cancel", "--db", d.url, "--queue", "email", "--id", itoa(gone)); code != 0 || !strings.Contains(out, "cancelled 1 job") {
			t.Errorf("cancel --id of the expired job = %d:\n%s%s", code, out, errs)
		}
	})
}

// TestSnapshotWarningCountsThisDatabase: on PostgreSQL, stats warns of a
// snapshot held open in its own database, and not of one held in another
// database on the same server, which holds back no vacuum here. On
// MariaDB, whose InnoDB purges for the whole server, a transaction open in
// any database holds back this one's purge, and stats warns of it.
func TestSnapshotWarningCountsThisDatabase(t *testing.T) {
	// Not on Citus (dbtest.AndCitus): there every test has a schema of
	// the cluster's one database, not a database of its own, so another
	// test's snapshot is one of this database's.
	eachOpsEngineOf(t, dbtest.Engines, func(t *testing.T, d *opsDB) {
		ctx := context.Background()
		begin := map[string]string{dburl.PostgreSQL: "BEGIN ISOLATION LEVEL REPEATABLE READ", dburl.MySQL: "START TRANSACTION WITH CONSISTENT SNAPSHOT"}[d.dialect()]
		pid := map[string]string{dburl.PostgreSQL: "SELECT pg_backend_pid()", dburl.MySQL: "SELECT CONNECTION_ID()"}[d.dialect()]
		other := dbtest.New(t, d.engine)
		elsewhere, err := other.SQL.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer elsewhere.Close()
		var otherPID int64
		if err := elsewhere.QueryRowContext(ctx, pid).Scan(&otherPID); err != nil {
			t.Fatal(err)
		}
		if _, err := elsewhere.ExecContext(ctx, begin); err != nil {
			t.Fatal(err)
		}
		if _, err := elsewhere.ExecContext(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // InnoDB times a transaction's start to the second
		code, _, errs := d.run(t, "stats", "--db", d.url, "--warn-snapshot", "500ms")
		named := strings.Contains(errs, "session "+itoa(otherPID)+" ")
		if d.pg() && (code != 0 || named) {
			t.Errorf("stats beside a snapshot held in another database = %d, stderr:\n%s", code, errs)
		}
		if d.engine == dburl.MySQL && (code != 0 || !strings.Contains(errs, "has held a snapshot open for")) {
			t.Errorf("stats beside a transaction open in another database (server-wide purge) = %d, stderr:\n%s", code, errs)
		}
		// One held in this database is named, the other still held.
		here, err := d.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer here.Close()
		var herePID int64
		if err := here.QueryRowContext(ctx, pid).Scan(&herePID); err != nil {
			t.Fatal(err)
		}
		if _, err := here.ExecContext(ctx, begin); err != nil {
			t.Fatal(err)
		}
		if _, err := here.ExecContext(ctx, "SELECT count(*) FROM email_queue"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
		code, _, errs = d.run(t, "stats", "--db", d.url, "--warn-snapshot", "500ms")
		if code != 0 || !strings.Contains(errs, "has held a snapshot open for") ||
			(d.pg() && !strings.Contains(errs, "session "+itoa(herePID)+" ")) {
			t.Errorf("stats beside a snapshot held in its own database = %d, stderr:\n%s", code, errs)
		}
		here.ExecContext(ctx, "ROLLBACK")
		elsewhere.ExecContext(ctx, "ROLLBACK")
	})
}
