package dashboard_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/dbtest"
)

// TestHeldJobIsRunningOnEveryPage: a job a transaction-mode worker holds
// (its claiming transaction open) is running on every page, as the CLI
// shows it: counted running on the overview, listed under the running
// filter and not the available one, running on its own page with a note
// saying why, and without a retry button. Once the transaction ends it is
// available again.
func TestHeldJobIsRunningOnEveryPage(t *testing.T) {
	t.Parallel()
	// Not on Citus (dbtest.AndCitus): a distributed queue has no
	// transaction mode, so no worker holds a job by its transaction there.
	for _, engine := range dbtest.ThisRun() {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, engine)
			n := now(engine)
			var ids [2]int64
			for i := range ids {
				stmt := `INSERT INTO statement_queue (payload, max_attempts, run_after, created_at)
VALUES ('{"account_id": ` + strconv.Itoa(i+1) + `, "month": "2026-10-01", "format": "pdf"}', 3, ` + n + `, ` + n + `)`
				if engine == "postgresql" {
					if err := s.db.SQL.QueryRow(stmt + " RETURNING id").Scan(&ids[i]); err != nil {
						t.Fatal(err)
					}
					continue
				}
				res, err := s.db.SQL.Exec(stmt)
				if err != nil {
					t.Fatal(err)
				}
				ids[i], _ = res.LastInsertId()
			}
			held, free := strconv.FormatInt(ids[0], 10), strconv.FormatInt(ids[1], 10)
			tx, err := s.db.SQL.BeginTx(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			// What a transaction-mode claim does: lock the row, count the attempt.
			if _, err := tx.Exec(placeholders(engine, "UPDATE statement_queue SET attempt = attempt + 1 WHERE id = ?"), ids[0]); err != nil {
				t.Fatal(err)
			}
			link := func(id string) string { return `/queues/statement/jobs/` + id + `"` }
			rowState := func(id, state string) *regexp.Regexp {
				return regexp.MustCompile(`<tr class="state-` + state + `">\s*(<td class="select">[^\n]*</td>\s*)?<td><a href="/queues/statement/jobs/` + id + `"`)
			}
			for _, c := range []struct {
				path      string
				want, not []string
				rows      []*regexp.Regexp
			}{
				{"/", []string{`href="/queues/statement?state=running">1</a>`, `href="/queues/statement?state=available">1</a>`}, nil, nil},
				{"/queues/statement?state=running", []string{link(held)}, []string{link(free)}, []*regexp.Regexp{rowState(held, "running")}},
				{"/queues/statement?state=available", []string{link(free), "confirm?action=cancel"}, []string{link(held), "confirm?action=retry"}, []*regexp.Regexp{rowState(free, "available")}},
				{"/queues/statement?state=dead", []string{"confirm?action=retry"}, []string{"confirm?action=cancel"}, nil},
				{"/queues/statement", nil, nil, []*regexp.Regexp{rowState(held, "running"), rowState(free, "available")}},
				{"/queues/statement/jobs/" + held, []string{`<span class="state-running">running</span>`, `id="held"`, `id="action-cancel"`}, []string{`id="action-retry"`}, nil},
				{"/queues/statement/jobs/" + free, []string{`<span class="state-available">available</span>`}, []string{`id="held"`, `id="action-retry"`}, nil},
			} {
				code, body := s.get(c.path)
				bad := code != http.StatusOK
				for _, w := range c.want {
					bad = bad || !strings.Contains(body, w)
				}
				for _, w := range c.not {
					bad = bad || strings.Contains(body, w)
				}
				for _, re := range c.rows {
					bad = bad || !re.MatchString(body)
				}
				if bad {
					t.Errorf("GET %s with job %s held = %d:\n%s", c.path, held, code, body)
				}
			}
			// Retry never applies to available jobs: the confirm page says
			// so, as the CLI does, rather than offering to retry none.
			if code, body := s.get("/queues/statement/confirm?action=retry&state=available"); code != http.StatusBadRequest ||
				!strings.Contains(body, "retry never applies to available jobs (it applies to retrying, dead and succeeded jobs)") {
				t.Errorf("GET confirm retry of available jobs = %d:\n%s", code, body)
			}
			tx.Rollback()
			if code, body := s.get("/queues/statement/jobs/" + held); code != http.StatusOK || !strings.Contains(body, `<span class="state-available">available</span>`) || strings.Contains(body, `id="held"`) {
				t.Errorf("the job's page once the transaction ended = %d:\n%s", code, body)
			}
		})
	}
}
