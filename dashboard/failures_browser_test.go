package dashboard_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgxpool"

	citusjobs "github.com/queuegen/queuegen/examples/mailer-citus/jobs"
	"github.com/queuegen/queuegen/examples/mailer-mysql/jobs"
	pgjobs "github.com/queuegen/queuegen/examples/mailer/jobs"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/queue"
)

// failTwice pushes an email to f@example.com with the example app's
// generated queue and works it with a worker of its own whose handler
// fails the first attempt with an error (retried at once) and panics in
// the second, then stops the worker: the job then holds two failures,
// recorded by the runtime's own statements. It returns the job's id.
func failTwice(t *testing.T, engine string, db *dbtest.DB) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first := errors.New("smtp: 451 mailbox busy, try again")
	handle := func(attempt int32) error {
		if attempt == 1 {
			return queue.RetryAt(time.Now(), first)
		}
		panic("template: body: nil pointer")
	}
	opts := []queue.WorkerOption{queue.Node("failures-test"), queue.PollInterval(50 * time.Millisecond), queue.Concurrency(1)}
	var id int64
	var run func(context.Context) error
	if engine == dburl.MySQL {
		q := jobs.NewEmailQueue(db.SQL)
		res, err := q.Push(ctx, jobs.EmailPayload{TenantID: 4, Recipient: "f@example.com", Subject: "Hi", Body: "x"})
		if err != nil {
			t.Fatal(err)
		}
		id = res.ID
		run = q.Worker(func(_ context.Context, job *queue.Job[jobs.EmailPayload]) error {
			if job.Payload.Recipient != "f@example.com" {
				return queue.SnoozeFor(time.Hour) // the site's other jobs wait
			}
			return handle(job.Attempt)
		}, opts...).Run
	} else if engine == dbtest.Citus {
		pool, err := pgxpool.New(ctx, db.Address)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		q := citusjobs.NewEmailQueue(pool)
		res, err := q.Push(ctx, citusjobs.EmailPayload{TenantID: 4, Recipient: "f@example.com", Subject: "Hi", Body: "x"})
		if err != nil {
			t.Fatal(err)
		}
		id = res.ID
		run = q.Worker(func(_ context.Context, job *queue.Job[citusjobs.EmailPayload]) error {
			if job.Payload.Recipient != "f@example.com" {
				return queue.SnoozeFor(time.Hour)
			}
			return handle(job.Attempt)
		}, opts...).Run
	} else {
		pool, err := pgxpool.New(ctx, db.Address)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		q := pgjobs.NewEmailQueue(pool)
		res, err := q.Push(ctx, pgjobs.EmailPayload{TenantID: 4, Recipient: "f@example.com", Subject: "Hi", Body: "x"})
		if err != nil {
			t.Fatal(err)
		}
		id = res.ID
		run = q.Worker(func(_ context.Context, job *queue.Job[pgjobs.EmailPayload]) error {
			if job.Payload.Recipient != "f@example.com" {
				return queue.SnoozeFor(time.Hour)
			}
			return handle(job.Attempt)
		}, opts...).Run
	}
	workCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(workCtx) }()
	count := "SELECT JSON_LENGTH(errors) FROM email_queue WHERE id = ?"
	if engine != dburl.MySQL {
		count = "SELECT cardinality(errors) FROM email_queue WHERE id = $1"
	}
	for n := 0; n < 2; {
		if err := db.SQL.QueryRowContext(ctx, count, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatalf("job %d: %d failures after a minute, want 2", id, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	return id
}

// TestBrowserFailures is the error-time test: in headless Chromium, on
// each engine, a job that failed once with an error and once by a panic,
// through the runtime, shows on its page a failures table with each
// error's time (relative, the absolute time on hover), its attempt, its
// message, and the panic's stack collapsed under it; a job whose errors
// were recorded before the failures column existed shows their times as
// unknown; the overview shows the queues' failures of the last hour,
// with a rate where the queue keeps its succeeded jobs. It catches a
// failure statement that records no time or the wrong attempt, a stack
// lost or shown uncollapsed, errors paired with the wrong times, and a
// rate shown where there is nothing to divide by.
func TestBrowserFailures(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.AndCitus(dbtest.ThisRun()) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, engine)
			id := failTwice(t, engine, s.db)
			ctx := browser(t)
			run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
				t.Helper()
				if err := chromedp.Do(ctx, steps...); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			eval := func(what, js string) string {
				t.Helper()
				v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				return v
			}
			job := s.srv.URL + "/queues/email/jobs/" + strconv.FormatInt(id, 10)
			run("job page", chromedp.Navigate(job), chromedp.WaitVisible(chromedp.CSS(`#failures`)))
			shot(t, ctx, "job-failures")
			rows := eval("rows", `JSON.stringify([...document.querySelectorAll('#failures tbody tr')].map(r => [...r.cells].map(c => c.innerText.trim())))`)
			for _, want := range []string{`"1"`, `smtp: 451 mailbox busy, try again`, `"2"`, `panic: template: body: nil pointer`} {
				if !strings.Contains(rows, want) {
					t.Errorf("the failures table lacks %s: %s", want, rows)
				}
			}
			if strings.Contains(rows, "unknown") {
				t.Errorf("a failure recorded by the runtime without its time: %s", rows)
			}
			// Attempts: the first row's is 1, the second's 2.
			attempts := eval("attempts", `[...document.querySelectorAll('#failures td.attempt')].map(c => c.innerText.trim()).join(",")`)
			if attempts != "1,2" {
				t.Errorf("attempts %q, want 1,2", attempts)
			}
			// Times: relative, within the last minute, with the absolute
			// time (UTC) on hover and as the datetime.
			times := eval("times", `[...document.querySelectorAll('#failures td.when time')].map(e => e.innerText + "|" + e.title + "|" + e.getAttribute("datetime")).join("\n")`)
			lines := strings.Split(times, "\n")
			if len(lines) != 2 {
				t.Fatalf("%d times, want 2: %q", len(lines), times)
			}
			for _, l := range lines {
				parts := strings.Split(l, "|")
				at, err := time.Parse(time.RFC3339Nano, parts[2])
				if err != nil || time.Since(at) > 2*time.Minute || time.Since(at) < -time.Minute {
					t.Errorf("time %q: %v (want within the last minute)", l, err)
				}
				if !(parts[0] == "now" || strings.HasSuffix(parts[0], "s ago")) || !strings.HasSuffix(parts[1], " UTC") {
					t.Errorf("time %q: want seconds ago, the absolute time in the title", l)
				}
			}
			// The panic's stack: collapsed, under the second failure only,
			// and it opens.
			stack := eval("stack", `(() => { const d = document.querySelectorAll('#failures details'); return d.length + "|" + (d[0] ? d[0].closest('tr').id + "|" + d[0].open + "|" + d[0].querySelector('pre').textContent : ""); })()`)
			parts := strings.SplitN(stack, "|", 4)
			if len(parts) != 4 || parts[0] != "1" || parts[1] != "failure-2" || parts[2] != "false" || !strings.HasPrefix(parts[3], "goroutine ") || !strings.Contains(parts[3], "failures_browser_test.go") {
				t.Errorf("the stack: %q", stack)
			}
			run("open the stack", chromedp.Click(chromedp.CSS(`#failures details summary`)))
			if v := eval("opened", `String(document.querySelector('#failures details').open)`); v != "true" {
				t.Errorf("the stack did not open: %s", v)
			}
			msg := eval("message", `document.querySelector('#failure-2 td.error > pre').textContent`)
			if msg != "panic: template: body: nil pointer" {
				t.Errorf("the panic's message %q: the stack belongs under it, not in it", msg)
			}

			// The job seeded with errors and no failures: times unknown.
			run("old job", chromedp.Navigate(s.srv.URL+"/queues/email/jobs/"+strconv.FormatInt(s.dead, 10)), chromedp.WaitVisible(chromedp.CSS(`#failures`)))
			old := eval("old", `[...document.querySelectorAll('#failures td.when')].map(c => c.innerText.trim()).join(",")`)
			if old != "unknown,unknown,unknown" {
				t.Errorf("the errors from before the failures column: times %q, want unknown each", old)
			}

			// The overview: email keeps no succeeded job, so its failures
			// show as a count; statement keeps them, so as a rate.
			run("overview", chromedp.Navigate(s.srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#queues`)))
			cells := eval("hour", `JSON.stringify(Object.fromEntries([...document.querySelectorAll('#queues tbody tr')].map(r => [r.cells[0].innerText.trim(), r.querySelector('td.failed-hour') && r.querySelector('td.failed-hour').innerText.trim()])))`)
			for _, want := range []string{`"email":"2 failures"`, `"statement":"0% of 1"`} {
				if !strings.Contains(cells, want) {
					t.Errorf("the overview's failures of the hour %s, want %s", cells, want)
				}
			}
		})
	}
}
