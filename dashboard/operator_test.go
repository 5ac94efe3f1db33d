package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/queuegen/queuegen/dashboard"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
)

// insertJob runs an INSERT of one job (written for both engines: {now}
// is the clock) and returns its id.
func (s *site) insertJob(stmt string, args ...any) int64 {
	s.t.Helper()
	stmt = citusRows(s.db.Engine, placeholders(s.db.Engine, strings.ReplaceAll(stmt, "{now}", now(s.db.Engine))))
	var id int64
	if s.db.Engine != dburl.MySQL {
		if err := s.db.SQL.QueryRow(stmt+" RETURNING id", args...).Scan(&id); err != nil {
			s.t.Fatalf("%v\n%s", err, stmt)
		}
		return id
	}
	res, err := s.db.SQL.Exec(stmt, args...)
	if err != nil {
		s.t.Fatalf("%v\n%s", err, stmt)
	}
	id, _ = res.LastInsertId()
	return id
}

// TestDelayedAndExpiredJobsOnEveryPage: a job pushed with a delay is
// scheduled in the job list, on its page and in the overview's counts
// alike; a running job whose lease expired counts as lease expired on
// the overview, is listed so, and its page says the expiry is past.
func TestDelayedAndExpiredJobsOnEveryPage(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.AndCitus(dbtest.ThisRun()) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, engine)
			delayed := s.insertJob(`INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, run_after, created_at)
VALUES ('later@example.com', 'Hi', 'x', 1, 8, {now} + INTERVAL '1' HOUR, {now})`)
			expired := s.insertJob(`INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, state, attempt, locked_by, locked_until, attempted_at, run_after, created_at)
VALUES ('gone@example.com', 'Hi', 'x', 1, 8, 'running', 1, 'node-gone', {now} - INTERVAL '20' MINUTE, {now} - INTERVAL '21' MINUTE, {now}, {now})`)
			d, x := strconv.FormatInt(delayed, 10), strconv.FormatInt(expired, 10)
			row := func(id, state string) *regexp.Regexp {
				return regexp.MustCompile(`<tr class="state-` + state + `">\s*<td class="select">[^\n]*</td>\s*<td><a href="/queues/email/jobs/` + id + `"`)
			}
			for _, c := range []struct {
				path      string
				want, not []string
				rows      []*regexp.Regexp
			}{
				{"/", []string{`href="/queues/email?state=scheduled">1</a>`, `href="/queues/email?state=expired">1</a>`, `href="/queues/email?state=running">0</a>`, `>lease expired</span></th>`}, nil, nil},
				{"/queues/email", nil, nil, []*regexp.Regexp{row(d, "scheduled"), row(x, "expired")}},
				{"/queues/email?state=scheduled", []string{"/queues/email/jobs/" + d + `"`}, []string{"/queues/email/jobs/" + x + `"`}, nil},
				{"/queues/email?state=available", nil, []string{"/queues/email/jobs/" + d + `"`}, nil},
				{"/queues/email?state=expired", []string{"/queues/email/jobs/" + x + `"`, "lease expired"}, []string{"/queues/email/jobs/" + d + `"`}, nil},
				{"/queues/email?state=running", nil, []string{"/queues/email/jobs/" + x + `"`}, nil},
				{"/queues/email/jobs/" + d, []string{`<span class="state-scheduled">scheduled</span>`}, []string{`id="expired"`}, nil},
				{"/queues/email/jobs/" + x, []string{`<span class="state-expired">running, lease expired</span>`, `id="expired"`, "node-gone stopped or is late",
					"<th>Lease expired</th>", "20 min ago</time>: past", `id="action-cancel"`}, nil, nil},
			} {
				code, body := s.get(c.path)
				bad := code != http.StatusOK
				for _, w := range c.want {
					if !strings.Contains(body, w) {
						bad = true
						t.Errorf("GET %s lacks %q", c.path, w)
					}
				}
				for _, w := range c.not {
					if strings.Contains(body, w) {
						bad = true
						t.Errorf("GET %s has %q", c.path, w)
					}
				}
				for _, re := range c.rows {
					bad = bad || !re.MatchString(body)
				}
				if bad {
					t.Errorf("GET %s = %d:\n%s", c.path, code, body)
				}
			}
		})
	}
}

// TestFind: a form jumps to a job by its id; filtered lists say how many
// jobs match; lists of dead jobs show when each died; times read relative,
// with the absolute time on hover; the retry button is not styled as
// destructive; the server is named as its makers do.
func TestFind(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.AndCitus(dbtest.ThisRun()) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, engine)
			dead := strconv.FormatInt(s.dead, 10)
			code, body := s.get("/find?queue=email&id=+" + dead + "+")
			if code != http.StatusSeeOther || !strings.Contains(body, `href="/queues/email/jobs/`+dead+`"`) {
				t.Errorf("GET /find = %d, want a redirect to the job: %s", code, body)
			}
			for _, c := range []struct{ path, want string }{
				{"/find?queue=email&id=abc", `job id &#34;abc&#34;: want a job id`},
				{"/find?queue=nope&id=1", `no queue &#34;nope&#34;`},
			} {
				if code, body := s.get(c.path); code < 400 || !strings.Contains(body, c.want) {
					t.Errorf("GET %s = %d, want an error with %q:\n%s", c.path, code, c.want, body)
				}
			}
			// The server named as its makers do (the mysql engine's server
			// is MariaDB here, or MySQL).
			server := "PostgreSQL"
			if engine == dburl.MySQL {
				server = "MySQL"
				if strings.Contains(strings.ToLower(s.value("SELECT VERSION()")), "mariadb") {
					server = "MariaDB"
				}
			}
			for _, c := range []struct {
				path string
				want []string
				not  []string
			}{
				{"/", []string{`<form class="find" method="get" action="/find">`, `id="server">` + server}, nil},
				{"/queues/email", []string{`<strong>4</strong> job(s) match.`, `<form class="find"`, `<input type="hidden" name="queue" value="email">`,
					// the payload in its columns' order, not jsonb's
					`&#34;recipient&#34;:&#34;a@example.com&#34;,&#34;subject&#34;:&#34;Hi&#34;,&#34;body&#34;:&#34;x&#34;}`}, []string{"Died at"}},
				{"/queues/email?state=available", []string{`<strong>3</strong> job(s) match.`}, nil},
				{"/queues/email?column=recipient&value=b@example.com", []string{`<strong>1</strong> job(s) match.`}, nil},
				{"/queues/email?state=dead", []string{`<strong>1</strong> job(s) match.`, `<th class="c-time">Died at</th>`,
					`<td class="died"><time datetime="`}, nil},
				{"/queues/email/jobs/" + dead, []string{`<th>Died</th>`, `<span class="sub"><time datetime="`}, nil},
				{"/queues/email/confirm?action=retry&state=dead", []string{`<button id="confirm" class="primary">`}, []string{`class="danger"`}},
				{"/queues/email/confirm?action=purge&state=dead", []string{`<button id="confirm" class="danger">`}, nil},
			} {
				code, body := s.get(c.path)
				bad := code != http.StatusOK
				for _, w := range c.want {
					if !strings.Contains(body, w) {
						bad = true
						t.Errorf("GET %s lacks %q", c.path, w)
					}
				}
				for _, w := range c.not {
					if strings.Contains(body, w) {
						bad = true
						t.Errorf("GET %s has %q", c.path, w)
					}
				}
				if bad {
					t.Errorf("GET %s = %d:\n%s", c.path, code, body)
				}
			}
			// A job's page lists its payload columns in the table's order.
			if _, body := s.get("/queues/email/jobs/" + dead); !regexp.MustCompile(`(?s)<th>tenant_id</th>.*<th>recipient</th>.*<th>subject</th>.*<th>body</th>`).MatchString(body) {
				t.Errorf("the job's payload columns are not in the table's order:\n%s", body)
			}
			// A relative time carries its absolute time on hover.
			_, body = s.get("/queues/email?state=dead")
			if !regexp.MustCompile(`<time datetime="\d{4}-\d\d-\d\dT[0-9:.]+Z" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC">(now|\d+ s ago)</time>`).MatchString(body) {
				t.Errorf("no relative time with its absolute time:\n%s", body)
			}
		})
	}
}

// TestChartCountsAMinutesJobs pushes a burst of 15 jobs and reads the
// values the chart plots: the minute of the burst shows 15 (on
// PostgreSQL, the pushed line, from the row counters; on MariaDB, which
// keeps none, the finished line, from 15 jobs finished at once). When the
// chart is not pointed at, its legend shows the latest minute's values,
// not "--".
func TestChartCountsAMinutesJobs(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.AndCitus(dbtest.ThisRun()) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			// On Citus a reading asks every shard of every queue (about
			// half a second here), longer than 200 ms, which bounds it.
			every := 200 * time.Millisecond
			if engine == dbtest.Citus {
				every = 2 * time.Second
			}
			s := newSite(t, engine, dashboard.SampleEvery(every))
			line := "pushed"
			if engine == dburl.MySQL {
				line = "finished (rows kept)"
			}
			ctx := browser(t)
			do(t, ctx, "the overview", chromedp.EmulateViewport(1400, 900), chromedp.Navigate(s.srv.URL+"/"),
				chromedp.WaitVisible(chromedp.CSS(`.chart[data-src$="/throughput/email"][data-drawn="1"] canvas`)))
			// The counts before the burst, once they hold still (PostgreSQL
			// reports a session's row counts a second or so late).
			before := s.line("/throughput/email", line)
			if engine != dburl.MySQL {
				// The 4 email jobs seeded, which a session reports when it
				// has been idle a while (up to 10 s).
				for deadline := time.Now().Add(30 * time.Second); sum(before) < 4 && time.Now().Before(deadline); {
					time.Sleep(300 * time.Millisecond)
					before = s.line("/throughput/email", line)
				}
			}
			for stable := 0; stable < 3; {
				time.Sleep(500 * time.Millisecond)
				now := s.line("/throughput/email", line)
				if sum(now) == sum(before) {
					stable++
				} else {
					stable = 0
				}
				before = now
			}
			rows := make([]string, 15)
			for i := range rows {
				rows[i] = `('burst@example.com', 'Hi', 'x', 1, 8, 'succeeded', 1, {now}, {now}, {now})`
			}
			s.insertJob(`INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, state, attempt, finished_at, run_after, created_at) VALUES ` + strings.Join(rows, ", "))
			// The server's chart data: the burst, counted once, in one minute.
			var after map[int64]float64
			deadline := time.Now().Add(30 * time.Second)
			for {
				after = s.line("/throughput/email", line)
				if sum(after)-sum(before) >= 15 || time.Now().After(deadline) {
					break
				}
				time.Sleep(300 * time.Millisecond)
			}
			time.Sleep(time.Second)
			after = s.line("/throughput/email", line)
			var burst int64
			for at, v := range after {
				if v-before[at] == 15 {
					burst = at
				}
			}
			if sum(after)-sum(before) != 15 || burst == 0 {
				t.Fatalf("the %s line after a burst of 15 = %v (before it %v), want one minute 15 more", line, after, before)
			}
			// What uPlot plots for that minute (the chart refetches every 15 s).
			plotted, err := chromedp.Run(ctx, chromedp.Poll[float64](`(() => {
  const u = document.querySelector('.chart[data-src$="/throughput/email"]')._plot;
  const i = u.series.findIndex(s => s.label === `+strconv.Quote(line)+`);
  const x = u.data[0].indexOf(`+strconv.FormatInt(burst, 10)+`);
  if (i < 0 || x < 0) return null;
  const v = u.data[i][x];
  return v === `+strconv.FormatFloat(after[burst], 'f', -1, 64)+` ? v : null;
})()`, chromedp.WithPollingTimeout(40*time.Second)))
			if err != nil {
				t.Fatalf("the plotted %s value of the burst's minute = %v, %v; want %v", line, plotted, err, after[burst])
			}
			legend := eval[string](t, ctx, `document.querySelector('.chart[data-src$="/throughput/email"] .u-legend').innerText`)
			if strings.Contains(legend, "--") || !regexp.MustCompile(`(?i)`+regexp.QuoteMeta(line)+`:?\s*\d+`).MatchString(legend) {
				t.Errorf("the legend, not pointed at, reads %q; want the latest minute's values", legend)
			}
			shot(t, ctx, "chart-burst")
		})
	}
}

// line reads one line of a queue's chart data: its values by minute
// (Unix seconds), zeros and gaps left out.
func (s *site) line(path, label string) map[int64]float64 {
	s.t.Helper()
	var chart struct {
		At     []int64
		Series []struct {
			Label  string
			Values []*float64
		}
	}
	code, body := s.get(path)
	if err := json.Unmarshal([]byte(body), &chart); code != http.StatusOK || err != nil {
		s.t.Fatalf("GET %s = %d, %v:\n%s", path, code, err, body)
	}
	out := map[int64]float64{}
	for _, l := range chart.Series {
		if l.Label == label {
			for i, v := range l.Values {
				if v != nil && *v != 0 {
					out[chart.At[i]] = *v
				}
			}
		}
	}
	return out
}

func sum(vs map[int64]float64) (n float64) {
	for _, v := range vs {
		n += v
	}
	return n
}

// TestLongValuesKeepTheLayout: a 128-character hex unique key and a 10 kB
// payload wrap on the job page and the job list, at 1400 px, without a
// horizontal scroll; the full values stay on the page.
func TestLongValuesKeepTheLayout(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.AndCitus(dbtest.ThisRun()) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, engine)
			key := strings.Repeat("0123456789abcdef", 8)
			body := strings.Repeat("lorem-ipsum-", 854)[:10240]
			id := s.insertJob(`INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, unique_key, run_after, created_at)
VALUES (?, 'Hi', ?, 1, 8, ?, {now}, {now})`, strings.Repeat("x", 300)+"@example.com", body, key)
			ctx := browser(t)
			do(t, ctx, "the viewport", chromedp.EmulateViewport(1400, 900))
			for _, c := range []struct{ name, path, ready string }{
				{"job-long-values", "/queues/email/jobs/" + strconv.FormatInt(id, 10), "#unique-key"},
				{"jobs-long-values", "/queues/email", "table.jobs"},
			} {
				do(t, ctx, c.path, chromedp.Navigate(s.srv.URL+c.path), chromedp.WaitVisible(chromedp.CSS(c.ready)))
				scroll := eval[int](t, ctx, `document.documentElement.scrollWidth`)
				width := eval[int](t, ctx, `document.documentElement.clientWidth`)
				if scroll > width {
					t.Errorf("%s scrolls sideways at 1400 px: %d px wide in %d", c.path, scroll, width)
				}
				shot(t, ctx, c.name)
			}
			do(t, ctx, "the job", chromedp.Navigate(s.srv.URL+"/queues/email/jobs/"+strconv.FormatInt(id, 10)), chromedp.WaitVisible(chromedp.CSS(`#unique-key`)))
			shown := eval[string](t, ctx, `document.querySelector("#unique-key").textContent`)
			if strings.TrimSpace(shown) != key {
				t.Errorf("the unique key shows as %q, want it whole", shown)
			}
			cellWidth := eval[int](t, ctx, `document.querySelector("table.kv td").getBoundingClientRect().width|0`)
			payloadWidth := eval[int](t, ctx, `document.querySelector(".columns section").getBoundingClientRect().width|0`)
			if cellWidth < 200 || payloadWidth < 400 {
				t.Errorf("the payload column collapsed: its section %d px, its first value %d px", payloadWidth, cellWidth)
			}
			all := eval[string](t, ctx, `Array.from(document.querySelectorAll("table.kv pre")).map(p => p.textContent).join("\n")`)
			if !strings.Contains(all, body) {
				t.Errorf("the job page does not hold the 10 kB body whole")
			}
		})
	}
}

// TestListAndJobStayLive: the job list refreshes by itself, keeping a
// checked box checked and the page's scroll; a job's page shows its new
// state without a reload.
func TestListAndJobStayLive(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.AndCitus(dbtest.ThisRun()) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, engine)
			first := s.insertJob(`INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, run_after, created_at) VALUES ('first@example.com', 'Hi', 'x', 1, 8, {now}, {now})`)
			ctx := browser(t)
			box := `input[type=checkbox][value="` + strconv.FormatInt(first, 10) + `"]`
			do(t, ctx, "the list", chromedp.EmulateViewport(1400, 400), chromedp.Navigate(s.srv.URL+"/queues/email"),
				chromedp.WaitVisible(chromedp.CSS(box)), chromedp.Click(chromedp.CSS(box)))
			y0 := eval[float64](t, ctx, `window.scrollTo(0, 150); window.scrollY`)
			next := s.insertJob(`INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, run_after, created_at) VALUES ('next@example.com', 'Hi', 'x', 1, 8, {now}, {now})`)
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('a[href="/queues/email/jobs/`+strconv.FormatInt(next, 10)+`"]') !== null`,
				chromedp.WithPollingTimeout(15*time.Second))); err != nil {
				t.Fatalf("the list did not show the new job by itself: %v", err)
			}
			checked := eval[bool](t, ctx, `document.querySelector('`+box+`').checked`)
			y := eval[float64](t, ctx, `window.scrollY`)
			total := eval[string](t, ctx, `document.querySelector("#total").textContent`)
			if !checked {
				t.Errorf("the refresh unchecked job %d's box", first)
			}
			if y != y0 {
				t.Errorf("the refresh moved the page from %v to %v", y0, y)
			}
			if !strings.Contains(total, "6 job(s) match") {
				t.Errorf("the total after the refresh reads %q, want 6", total)
			}
			// The checked job, cancelled by the form of the jobs checked.
			do(t, ctx, "cancel the checked job", chromedp.Click(chromedp.CSS(`#selected-cancel`)), chromedp.WaitVisible(chromedp.CSS(`.flash`)))
			if got := s.value("SELECT state FROM email_queue WHERE id = ?", first); got != "dead" {
				t.Errorf("the checked job, cancelled, is %s", got)
			}
			// A job's page follows its job.
			id := strconv.FormatInt(next, 10)
			do(t, ctx, "the job", chromedp.Navigate(s.srv.URL+"/queues/email/jobs/"+id), chromedp.WaitVisible(chromedp.CSS(`.state-available`)))
			if _, err := s.db.SQL.Exec(placeholders(engine, "UPDATE email_queue SET state = 'dead', finished_at = "+now(engine)+" WHERE id = ?"), next); err != nil {
				t.Fatal(err)
			}
			if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`h1 .state-dead`))); err != nil {
				t.Errorf("the job's page did not show its new state by itself: %v", err)
			}
			shot(t, ctx, "job-live")
		})
	}
}

// do runs steps in the browser, failing t if one fails.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates expr in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}
