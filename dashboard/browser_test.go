package dashboard_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
)

// screenshots, when set, is a directory the browser test also writes its
// screenshots to (the README's come from: go test ./dashboard -run
// TestBrowser/postgresql -screenshots ../docs/dashboard).
var screenshots = flag.String("screenshots", "", "also write the browser test's screenshots to this directory")

// chromium finds the browser, or fails the test saying how to install it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Fatal("no Chromium to run the browser tests in: install it (Debian: apt-get install -y chromium); .ci/run does")
	return ""
}

// browser starts a headless Chromium for t, failing t on any exception a
// page's scripts throw.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	// A bound that stops a hung browser, not a speed check: on two cores
	// busy with other suites, one engine's walk through every page once
	// took over 90 s (a CI run of 2026-11-24).
	ctx, cancelTime := context.WithTimeout(ctx, 240*time.Second)
	// Exceptions are collected and reported when the test ends: the
	// listener may run after it has.
	var mu sync.Mutex
	var thrown []string
	t.Cleanup(func() {
		cancelTime()
		cancelCtx()
		cancelAlloc()
		mu.Lock()
		defer mu.Unlock()
		for _, ex := range thrown {
			t.Errorf("a script threw: %s", ex)
		}
	})
	if err := chromedp.Listen(ctx, func(ev any) {
		if ex, ok := ev.(*runtime.EventExceptionThrown); ok {
			mu.Lock()
			thrown = append(thrown, fmt.Sprintf("%s %v", ex.ExceptionDetails.Text, ex.ExceptionDetails.Exception))
			mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// shot saves a screenshot of the whole page as name.png under the test's
// temporary directory, and under -screenshots when given.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dirs := []string{t.TempDir()}
	if *screenshots != "" {
		dirs = append(dirs, *screenshots)
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshot %s: %d bytes", name, len(png))
}

// TestBrowser loads every page in headless Chromium against a real
// database of each engine, clicks pause and retry, and checks the
// database changed; the counts refresh without a reload.
func TestBrowser(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.AndCitus(dbtest.ThisRun()) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, engine)
			ctx := browser(t)
			dead := strconv.FormatInt(s.dead, 10)
			run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
				t.Helper()
				if err := chromedp.Do(ctx, steps...); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			// clickUntil clicks sel until want shows, up to three times: the
			// live refresh (every 3 s) may replace the element between the
			// query for it and the click, and the click is then lost.
			clickUntil := func(what, sel, want string) {
				t.Helper()
				for try := 1; ; try++ {
					stepCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
					err := chromedp.Do(stepCtx, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS(want)))
					cancel()
					if err == nil {
						return
					}
					if try == 3 {
						t.Fatalf("%s: %v", what, err)
					}
				}
			}
			// text reads an element's text in one evaluation, polling until
			// it has some: the live refresh may replace the node between a
			// query for it and a read of it.
			text := func(sel string) string {
				t.Helper()
				s, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const e = document.querySelector(`+strconv.Quote(sel)+`); return e && e.innerText; })()`,
					chromedp.WithPollingTimeout(10*time.Second)))
				if err != nil {
					t.Fatalf("the text of %s: %v", sel, err)
				}
				return s
			}

			// The overview, with its charts drawn by uPlot.
			run("overview", chromedp.Navigate(s.srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`.chart[data-drawn="1"] canvas`)))
			shot(t, ctx, "overview")

			// The counts refresh by themselves (htmx, every 3 s).
			cell := `#queues a[href="/queues/email?state=available"]`
			before := text(cell)
			if _, err := s.db.SQL.Exec(citusRows(engine, `INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, run_after, created_at)
VALUES ('d@example.com', 'Hi', 'x', 1, 8, `+now(engine)+`, `+now(engine)+`)`)); err != nil {
				t.Fatal(err)
			}
			want := strconv.Itoa(mustAtoi(t, before) + 1)
			run("wait for the refresh", chromedp.Poll[chromedp.Void](`document.querySelector('`+cell+`').textContent === "`+want+`"`,
				chromedp.WithPollingTimeout(10*time.Second)))

			// Pause, by its button.
			clickUntil("pause", `form[action="/queues/email/pause"] button`, `.flash`)
			flash := text(`.flash`)
			if !strings.Contains(flash, "queue email paused") || !s.paused("email") {
				t.Errorf("after clicking Pause: flash %q, paused %v", flash, s.paused("email"))
			}

			// A job list, filtered. The dead job's link is on the unfiltered
			// list too, so the wait is for the filtered page itself, loaded:
			// waiting for the link alone could return before the navigation
			// the filter starts, and a screenshot taken during a navigation
			// can hang until the test's deadline (seen once in a CI run).
			run("jobs", chromedp.Navigate(s.srv.URL+"/queues/email"), chromedp.WaitVisible(chromedp.CSS(`table.jobs`)),
				chromedp.SetValue(chromedp.CSS(`select[name="state"]`), "dead"), chromedp.Click(chromedp.CSS(`form.filters button`)))
			filtered := `location.search.includes("state=dead") && document.readyState === "complete" && !!document.querySelector('a[href="/queues/email/jobs/` + dead + `"]')`
			for deadline := time.Now().Add(30 * time.Second); ; {
				// The poll fails while the old page unloads ("target
				// navigated"): poll again, on the new one.
				stepCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := chromedp.Do(stepCtx, chromedp.Poll[chromedp.Void](filtered, chromedp.WithPollingTimeout(10*time.Second)))
				cancel()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the filtered job list: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			shot(t, ctx, "jobs")

			// The hostile job: its payload shows as text, and Retry works.
			clickUntil("job", `a[href="/queues/email/jobs/`+dead+`"]`, `#action-retry`)
			payload := text(`table.kv`)
			if !strings.Contains(payload, hostile[:len(`<script>alert(1)</script>`)]) {
				t.Errorf("the payload does not show as text: %q", payload)
			}
			shot(t, ctx, "job")
			clickUntil("retry", `#action-retry`, `.flash`)
			flash = text(`.flash`)
			if got := s.value("SELECT state FROM email_queue WHERE id = ?", s.dead); got != "available" || !strings.Contains(flash, "retried 1 job") {
				t.Errorf("after clicking retry: the job is %s, flash %q", got, flash)
			}

			// Purge by filter, through its confirm page.
			run("confirm", chromedp.Navigate(s.srv.URL+"/queues/email/confirm?action=purge&column=recipient&value=a@example.com"),
				chromedp.WaitVisible(chromedp.CSS(`#confirm`)), chromedp.Click(chromedp.CSS(`#confirm`)), chromedp.WaitVisible(chromedp.CSS(`.flash`)))
			flash = text(`.flash`)
			if n := s.value("SELECT COUNT(*) FROM email_queue WHERE recipient = 'a@example.com'"); n != "0" || !strings.Contains(flash, "purged 1 job") {
				t.Errorf("after confirming the purge: %s jobs left, flash %q", n, flash)
			}

			run("periodic", chromedp.Navigate(s.srv.URL+"/periodic"), chromedp.WaitVisible(chromedp.CSS(`table.periodic`)))
			shot(t, ctx, "periodic")
			if engine == dburl.PostgreSQL {
				run("overview again", chromedp.Navigate(s.srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`.chart[data-drawn="1"] canvas`)))
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("a count %q: %v", s, err)
	}
	return n
}
