package dashboard_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/queuegen/queuegen/internal/dbtest"
)

// TestBrowserNodes runs two worker processes of queue email
// (dashboard/internal/nodeworker), each holding the two jobs it claims,
// and watches the Nodes page in headless Chromium: both nodes alive with
// their leases counted; then one is SIGKILLed, and without a reload the
// page marks its node stale and lists the jobs it still leases, each
// linking to its job page, while the other stays alive.
//
// It catches: a worker that records no node (no rows), a heartbeat that
// stops after the first (the survivor goes stale too), a killed node never
// shown stale, held leases not counted per node, the killed node's leases
// not listed or listed with the wrong jobs, and a Nodes page that does not
// refresh itself. (The exact threshold, StaleBeats intervals, is
// TestNodes' in internal/ops: here the page has 15 s to turn.)
func TestBrowserNodes(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "nodeworker")
	if out, err := exec.Command("go", "build", "-o", bin, "./internal/nodeworker").CombinedOutput(); err != nil {
		t.Fatalf("building the worker: %v\n%s", err, out)
	}
	for _, engine := range dbtest.AndCitus(dbtest.ThisRun()) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, engine)
			// Six due emails (the seed has three): two for each worker, and
			// two left over.
			if _, err := s.db.SQL.Exec(citusRows(engine, `INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, run_after, created_at)
VALUES ('d@example.com', 'Hi', 'x', 1, 8, `+now(engine)+`, `+now(engine)+`), ('e@example.com', 'Hi', 'x', 1, 8, `+now(engine)+`, `+now(engine)+`),
('f@example.com', 'Hi', 'x', 1, 8, `+now(engine)+`, `+now(engine)+`)`)); err != nil {
				t.Fatal(err)
			}
			start := func(node string) *exec.Cmd {
				app := strings.TrimPrefix(example(engine), "../examples/")
				cmd := exec.Command(bin, "-db", s.db.Address, "-app", app, "-node", node, "-concurrency", "2", "-beat", "200ms")
				var out strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					cmd.Process.Signal(syscall.SIGTERM)
					cmd.Wait()
					if t.Failed() && out.Len() > 0 {
						t.Logf("worker %s said:\n%s", node, out.String())
					}
				})
				return cmd
			}
			start("survivor")
			doomed := start("doomed")
			held := func(node string) []string {
				t.Helper()
				rows, err := s.db.SQL.Query(`SELECT id FROM email_queue WHERE state = 'running' AND locked_by = '` + node + `' ORDER BY id`)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				var ids []string
				for rows.Next() {
					var id int64
					if err := rows.Scan(&id); err != nil {
						t.Fatal(err)
					}
					ids = append(ids, strconv.FormatInt(id, 10))
				}
				return ids
			}
			deadline := time.Now().Add(30 * time.Second)
			for len(held("survivor")) < 2 || len(held("doomed")) < 2 || s.value("SELECT COUNT(*) FROM queuegen_nodes") != "2" {
				if time.Now().After(deadline) {
					t.Fatalf("the workers did not each lease two jobs and record their nodes: survivor %v, doomed %v, %s node rows",
						held("survivor"), held("doomed"), s.value("SELECT COUNT(*) FROM queuegen_nodes"))
				}
				time.Sleep(50 * time.Millisecond)
			}
			doomedJobs := held("doomed")

			ctx := browser(t)
			run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
				t.Helper()
				if err := chromedp.Do(ctx, steps...); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			// rows reads the nodes table as "node|held|status" lines.
			rows := `Array.from(document.querySelectorAll('table.nodes tr.node')).map(r => [r.cells[0].innerText, r.cells[7].innerText, r.cells[10].innerText].join('|')).join('\n')`
			run("nodes page", chromedp.Navigate(s.srv.URL+"/"), chromedp.Click(chromedp.CSS(`nav a[href="/nodes"]`)),
				chromedp.WaitVisible(chromedp.CSS(`table.nodes`)))
			want := "doomed|2|alive\nsurvivor|2|alive"
			if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](rows+` === `+strconv.Quote(want), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
				got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](rows))
				t.Fatalf("before the kill the nodes read\n%s\nwant\n%s", got, want)
			}

			if err := doomed.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			doomed.Wait()
			// Without a reload: the page refreshes itself every 3 s, and the
			// node is stale 3 heartbeats (600 ms) after its last.
			want = "doomed|2|stale\nsurvivor|2|alive"
			if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](rows+` === `+strconv.Quote(want), chromedp.WithPollingTimeout(15*time.Second))); err != nil {
				got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](rows))
				t.Fatalf("after the kill the nodes read\n%s\nwant\n%s", got, want)
			}
			leases := `Array.from(document.querySelectorAll('table.leases tr.lease')).map(r => r.cells[2].innerText.split(' ')[0] + '|' + r.cells[1].querySelector('a').getAttribute('href')).join('\n')`
			var wantLeases []string
			for _, id := range doomedJobs {
				wantLeases = append(wantLeases, "doomed|/queues/email/jobs/"+id)
			}
			got, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const l = `+leases+`; return l !== '' && l; })()`, chromedp.WithPollingTimeout(10*time.Second)))
			if err != nil || got != strings.Join(wantLeases, "\n") {
				t.Fatalf("the leases of stopped nodes read\n%s (%v)\nwant\n%s", got, err, strings.Join(wantLeases, "\n"))
			}
			if survivor := held("survivor"); slices.ContainsFunc(survivor, func(id string) bool { return slices.Contains(doomedJobs, id) }) {
				t.Errorf("the survivor holds a job of the killed node within its lease: %v and %v", survivor, doomedJobs)
			}
			shot(t, ctx, "nodes")

			// A lease's link leads to its job.
			run("a lease's job", chromedp.Click(chromedp.CSS(fmt.Sprintf(`table.leases a[href="/queues/email/jobs/%s"]`, doomedJobs[0]))),
				chromedp.WaitVisible(chromedp.CSS(`table.kv`)))
		})
	}
}

// TestNodesPage reads the Nodes page over HTTP on each engine: a node
// recorded by hand shows with its facts, escaped; a lease held by a node id
// with no row is listed as such; and a database whose nodes table is
// missing (its migration not applied) gets the page with the reason, not
// an error page, so the rest of the dashboard stays usable. It catches a
// page that hides unknown nodes' leases, or that fails outright before the
// migration.
func TestNodesPage(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.AndCitus(dbtest.ThisRun()) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, engine)
			n := now(engine)
			for _, stmt := range []string{
				`INSERT INTO queuegen_nodes (node, queue, concurrency, running, host, pid, started_at, heartbeat_at, heartbeat_ms)
VALUES ('<b>n1</b>', 'email', 7, 3, 'web-1', 4242, ` + n + `, ` + n + `, 60000)`,
				`INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, state, attempt, locked_by, locked_until, attempted_at, run_after, created_at)
VALUES ('z@example.com', 'Hi', 'x', 1, 8, 'running', 1, 'ghost', ` + n + `, ` + n + `, ` + n + `, ` + n + `)`,
			} {
				if _, err := s.db.SQL.Exec(citusRows(engine, stmt)); err != nil {
					t.Fatalf("%v\n%s", err, stmt)
				}
			}
			ghost := s.value("SELECT id FROM email_queue WHERE locked_by = 'ghost'")
			code, body := s.get("/nodes")
			for _, want := range []string{"&lt;b&gt;n1&lt;/b&gt;", "web-1", "4242", ">alive<", `href="/queues/email/jobs/` + ghost + `"`, "<code>ghost</code>", "no node row"} {
				if code != 200 || !strings.Contains(body, want) {
					t.Errorf("GET /nodes = %d, without %q:\n%s", code, want, body)
				}
			}
			if _, err := s.db.SQL.Exec("DROP TABLE queuegen_nodes"); err != nil {
				t.Fatal(err)
			}
			if code, body := s.get("/nodes"); code != 200 || !strings.Contains(body, "apply the migration that creates it") {
				t.Errorf("without the nodes table: GET /nodes = %d:\n%s", code, body)
			}
		})
	}
}
