package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
)

// TestOpsSeeBacklogJobs: the operations count, list and change the jobs
// of a queue with a backlog wherever they are, in the queue table or
// waiting in the backlog: on PostgreSQL the backlog inherits from the
// queue table, on MySQL it is a table of its own that they read and
// change beside it. Queue backlogged of the e2e specs.
func TestOpsSeeBacklogJobs(t *testing.T) {
	// Not on Citus (dbtest.AndCitus): a distributed queue has no backlog
	// (refused at the spec key: not built for Citus yet).
	for _, engine := range dbtest.Engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			d := &opsDB{engine: engine}
			if engine == dburl.PostgreSQL {
				d.url, _ = seeded(t)
			} else {
				d.url = opsMigrated(t, "../../integration/e2e/mysql/db/migrations")
			}
			d.db = opsOpen(t, d.url)
			cols := "(tenant, n, max_attempts, created_at, run_after)"
			// Three due jobs waiting in the backlog, one later, and two in
			// the queue table (moved by a step); ids as pushes give them.
			d.exec(t, d.sql("INSERT INTO backlogged_queue_backlog "+cols+" VALUES ('a', 1, 3, {now}, {now}), ('a', 2, 3, {now}, {now}), ('b', 1, 3, {now}, {now})"))
			hour := map[string]string{dburl.PostgreSQL: "interval '1 hour'", dburl.MySQL: "INTERVAL 1 HOUR"}[engine]
			d.exec(t, d.sql("INSERT INTO backlogged_queue_backlog "+cols+" VALUES ('b', 2, 3, {now}, {now} + "+hour+")"))
			d.exec(t, d.sql("INSERT INTO backlogged_queue (id, tenant, n, max_attempts, created_at, run_after) VALUES (1001, 'c', 1, 3, {now}, {now}), (1002, 'c', 2, 3, {now}, {now})"))

			code, out, _ := run(t, "stats", "--db", d.url, "--json")
			var stats []map[string]any
			if code != 0 || json.Unmarshal([]byte(out), &stats) != nil {
				t.Fatalf("stats --json = %d:\n%s", code, out)
			}
			found := false
			for _, s := range stats {
				if s["queue"] == "backlogged" {
					found = true
					if s["ready"] != 5.0 || s["scheduled"] != 1.0 {
						t.Errorf("backlogged stats = %v; want 5 ready (3 in the backlog, 2 in the queue table), 1 scheduled", s)
					}
				}
			}
			if !found {
				t.Fatalf("no queue backlogged in stats:\n%s", out)
			}
			if code, out, _ := run(t, "jobs", "--db", d.url, "--queue", "backlogged"); code != 0 || !strings.Contains(out, "6 jobs") {
				t.Errorf("jobs = %d:\n%s", code, out)
			}
			if code, out, _ := run(t, "jobs", "--db", d.url, "--queue", "backlogged", "--limit", "3"); code != 0 || !strings.Contains(out, "1002") || !strings.Contains(out, "1001") {
				t.Errorf("jobs --limit 3 (newest first: the queue table's two, then the backlog's newest) = %d:\n%s", code, out)
			}

			// Cancel every unfinished job: those waiting are cancelled in
			// the backlog, where they stay, dead.
			code, out, _ = run(t, "cancel", "--db", d.url, "--queue", "backlogged", "--state", "available", "--yes")
			if code != 0 || !strings.Contains(out, "cancelled 5 jobs of queue backlogged") {
				t.Errorf("cancel = %d:\n%s", code, out)
			}
			only := map[string]string{dburl.PostgreSQL: "ONLY ", dburl.MySQL: ""}[engine]
			if n := d.one(t, "SELECT count(*) FROM backlogged_queue_backlog WHERE state = 'dead'"); n != 3 {
				t.Errorf("%d dead jobs in the backlog, want the 3 cancelled there", n)
			}
			if n := d.one(t, "SELECT count(*) FROM "+only+"backlogged_queue WHERE state = 'dead'"); n != 2 {
				t.Errorf("%d dead jobs in the queue table, want the 2 cancelled there", n)
			}
			code, out, _ = run(t, "retry", "--db", d.url, "--queue", "backlogged", "--state", "dead", "--yes")
			if code != 0 || !strings.Contains(out, "retried 5 jobs of queue backlogged") {
				t.Errorf("retry = %d:\n%s", code, out)
			}
			if n := d.one(t, "SELECT count(*) FROM backlogged_queue_backlog WHERE state = 'available'"); n != 4 {
				t.Errorf("%d available jobs in the backlog after the retry, want 4", n)
			}
			code, out, _ = run(t, "purge", "--db", d.url, "--queue", "backlogged", "--state", "available", "--yes")
			if code != 0 || !strings.Contains(out, "purged 5 jobs of queue backlogged") {
				t.Errorf("purge = %d:\n%s", code, out)
			}
			if n := d.one(t, "SELECT count(*) FROM backlogged_queue_backlog"); n != 1 {
				t.Errorf("%d jobs left in the backlog after the purge, want the one scheduled later", n)
			}
		})
	}
}
