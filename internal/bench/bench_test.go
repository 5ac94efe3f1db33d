package bench

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuegen/queuegen/internal/bench/jobs"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/pgtest"
	"github.com/queuegen/queuegen/queue"
)

// TestMain runs the tests, or, when the limits workload started this test
// binary as one of its worker processes, that worker.
func TestMain(m *testing.M) {
	if code, ok := ChildMain(); ok {
		os.Exit(code)
	}
	os.Exit(pgtest.RunMain(m))
}

var summaryLine = regexp.MustCompile(`(?m)^bench (\S+): (\d+) jobs in \d+\.\d{3} s = \d+ jobs/s( p50=\d+\.\d{3} p99=\d+\.\d{3})?$`)

// TestEveryWorkloadSmoke runs each workload once on a small N, on every
// engine (SQL Server where $QUEUEGEN_SQLSERVER_URL names one): a smoke
// test of the bench (it asserts the output's form, never a speed).
func TestEveryWorkloadSmoke(t *testing.T) {
	for _, engine := range smokeEngines(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			cfg, address, health := smokeConfig(t, engine, &out)
			cfg.Workload = "all"
			if err := Run(context.Background(), address, cfg); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			got := map[string]string{}
			for _, m := range summaryLine.FindAllStringSubmatch(out.String(), -1) {
				got[m[1]] = m[0]
			}
			for _, w := range Workloads {
				if got[w] == "" {
					t.Errorf("no summary line for %s in:\n%s", w, out.String())
				}
			}
			for _, w := range []string{"push", "push-many", "latency", "latency-poll"} {
				if !regexp.MustCompile(`p50=`).MatchString(got[w]) {
					t.Errorf("%s summary lacks p50/p99: %q", w, got[w])
				}
			}
			if !regexp.MustCompile(`(?m)^steady: pushed \d+ at \d+ jobs/s; depth \[.*\]; ` + health).MatchString(out.String()) {
				t.Errorf("steady lacks its table-health line:\n%s", out.String())
			}
		})
	}
}

// TestDrainScaleSmoke runs drain-scale on small numbers, on every engine
// (SQL Server where one is given): each case's summary line, then its
// line of ratio and sizes.
func TestDrainScaleSmoke(t *testing.T) {
	for _, engine := range smokeEngines(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			cfg, address, _ := smokeConfig(t, engine, &out)
			cfg.Workload, cfg.Backlogs, cfg.Kept, cfg.Hold = DrainScale, []int{900}, 600, time.Second
			cfg.Chart = filepath.Join(t.TempDir(), "drain-scale.png")
			if err := Run(context.Background(), address, cfg); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			for _, c := range []string{"base", "backlog-900", "kept-0", "kept-600", "snapshot-1s"} {
				name := regexp.QuoteMeta("drain-scale/" + c)
				if !regexp.MustCompile(`(?m)^bench ` + name + `: 300 jobs in `).MatchString(out.String()) {
					t.Errorf("no summary line for %s in:\n%s", c, out.String())
				}
				detail := `(?m)^  ` + name + `: (\d+\.\d\d× \S+; )?filled in \d+\.\d s; table \d+\.\d MB → \d+\.\d MB, indexes \d+\.\d MB → \d+\.\d MB$`
				if !regexp.MustCompile(detail).MatchString(out.String()) {
					t.Errorf("no ratio and sizes line for %s in:\n%s", c, out.String())
				}
			}
			f, err := os.Open(cfg.Chart)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if img, err := png.Decode(f); err != nil || img.Bounds().Dx() != 960 {
				t.Errorf("the chart is not a 960-pixel-wide PNG: %v", err)
			}
		})
	}
}

// TestFeatureSmoke runs the workloads of the queues' features on small
// numbers, on every engine: retention (PostgreSQL's: both cases, the
// archive's leaving no dead tuples); skew and spread (the cases with the
// waits, and the ratio line: ordered, fair and backlog on PostgreSQL,
// ordered and fair on MySQL, which has no backlog); limits (the drain by
// worker processes, sampled within the limits); rate (the drain by worker
// processes, no second above the rate). Where an engine lacks the
// feature (mysql nil), the workload refuses, saying where to run it: on
// MySQL, retention. SQL Server (where one is given) has what PostgreSQL
// has but retention's archive partitions, and refuses retention.
func TestFeatureSmoke(t *testing.T) {
	rate := []string{
		`^bench rate: 1200 jobs in `,
		`^  rate: at most ([0-9]|[1-9][0-9]|[1-4][0-9][0-9]|500) jobs claimed within one second \(limit 500\); \d+ whole seconds: \d+ claimed a second \(\d+\.\d\d× the limit\), least \d+, most \d+$`,
	}
	limits := []string{
		`^bench limits: 2000 jobs in `,
		`^  limits: \d+ samples: at most [0-3] running per tenant \(limit 3\), ([0-9]|1[0-9]|20) in all \(limit 20\); \d+\.\d\d× of the 1000 jobs/s the global limit allows \(20 slots, 20ms jobs\)$`,
	}
	engines := smokeEngines(t)
	for _, w := range []struct {
		workload string
		jobs     int
		want     []string // regular expressions, each a line of the output
		mysql    []string // the same on MySQL; nil: MySQL refuses
	}{
		{Retention, 2000, []string{
			`^bench retention/keep: 2000 jobs in `,
			`^bench retention/archive: 2000 jobs in `,
			`^  retention/archive: 0 dead tuples left for vacuum; tables \d+\.\d MB → \d+\.\d MB$`,
		}, nil},
		{Skew, 500, []string{
			`^bench skew/ordered: 1500 jobs in .* p50=\d+\.\d{3} p99=\d+\.\d{3}$`,
			`^bench skew/fair: 1500 jobs in .* p50=\d+\.\d{3} p99=\d+\.\d{3}$`,
			`^bench skew/backlog: 1500 jobs in .* p50=\d+\.\d{3} p99=\d+\.\d{3}$`,
			`^  skew: fair drained at \d+\.\d\d×, backlog at \d+\.\d\d× the ordered queue's rate \(backlog/fair \d+\.\d\d×\)$`,
		}, []string{
			`^bench skew/ordered: 1500 jobs in .* p50=\d+\.\d{3} p99=\d+\.\d{3}$`,
			`^bench skew/fair: 1500 jobs in .* p50=\d+\.\d{3} p99=\d+\.\d{3}$`,
			`^  skew: fair drained at \d+\.\d\d× the ordered queue's rate$`,
		}},
		{Spread, 2000, []string{
			`^bench spread/ordered: 2000 jobs in `,
			`^bench spread/fair: 2000 jobs in `,
			`^bench spread/backlog: 2000 jobs in `,
			`^  spread: fair drained at \d+\.\d\d×, backlog at \d+\.\d\d× the ordered queue's rate \(backlog/fair \d+\.\d\d×\)$`,
		}, []string{
			`^bench spread/ordered: 2000 jobs in `,
			`^bench spread/fair: 2000 jobs in `,
			`^  spread: fair drained at \d+\.\d\d× the ordered queue's rate$`,
		}},
		{Rate, 1200, rate, rate},
		{Limits, 2000, limits, limits},
	} {
		for _, engine := range engines {
			t.Run(w.workload+"/"+engine, func(t *testing.T) {
				t.Parallel()
				var out bytes.Buffer
				cfg, address, _ := smokeConfig(t, engine, &out)
				cfg.Workload, cfg.Jobs = w.workload, w.jobs
				if w.workload == Retention {
					cfg.Batch = 300
				}
				err := Run(context.Background(), address, cfg)
				want := w.want
				if engine == dburl.SQLServer && w.workload == Retention {
					if err == nil || !strings.Contains(err.Error(), "run it on PostgreSQL") {
						t.Errorf("%s on SQL Server = %v", w.workload, err)
					}
					return
				}
				if engine == dburl.MySQL {
					if want = w.mysql; want == nil {
						if err == nil || !strings.Contains(err.Error(), "run it on PostgreSQL") {
							t.Errorf("%s on MySQL = %v", w.workload, err)
						}
						return
					}
				}
				if err != nil {
					t.Fatalf("%v\n%s", err, out.String())
				}
				for _, line := range want {
					if !regexp.MustCompile(`(?m)` + line).MatchString(out.String()) {
						t.Errorf("no line %s in:\n%s", line, out.String())
					}
				}
			})
		}
	}
}

// smokeEngines are the engines the smoke tests run on: SQL Server too
// where $QUEUEGEN_SQLSERVER_URL names one, and the log says when it does
// not.
func smokeEngines(t *testing.T) []string {
	engines := dbtest.AndSQLServer(dbtest.Engines)
	if !slices.Contains(engines, dburl.SQLServer) {
		t.Logf("no SQL Server run of the bench: set %s to run it on one too", dbtest.EnvSQLServer)
	}
	return engines
}

// smokeConfig is a small bench run, the address of a database of the
// test's own, and the form of the engine's table-health line.
func smokeConfig(t *testing.T, engine string, out *bytes.Buffer) (Config, string, string) {
	cfg := Config{Jobs: 300, Duration: 2 * time.Second, Out: out}
	health := `dead tuples \d+, live \d+, table with indexes`
	db := dbtest.New(t, engine)
	if engine == dburl.SQLServer {
		// The bench's own database, beside the test's, as on MySQL.
		cfg.database = msDatabaseOf(db.Address) + "_bench"
		health = `ghost records ~\d+, version store (\d+\.\d MB|unreadable), rows \d+, table with indexes`
	}
	if engine == dburl.MySQL {
		// The bench's own database, beside the test's: named after it, so
		// that parallel runs on one server do not meet.
		parsed, err := dburl.Parse(db.Address)
		if err != nil {
			t.Fatal(err)
		}
		cfg.database = parsed.MySQL.DBName + "_bench"
		health = `InnoDB history list -?\d+, rows ~\d+, table with indexes`
	}
	return cfg, db.Address, health
}

// prepared returns the PostgreSQL bench queue on a bench schema holding
// n due jobs.
func prepared(b *testing.B, n int) *jobs.BenchQueue {
	b.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(b)
	t := &pgTarget{pool: pool}
	if err := t.setup(ctx); err != nil {
		b.Fatal(err)
	}
	if err := t.fill(ctx, n); err != nil {
		b.Fatal(err)
	}
	return jobs.NewBenchQueue(pool)
}

// BenchmarkClaim100 claims 100 jobs at a time (one statement), the
// worker's hot path.
func BenchmarkClaim100(b *testing.B) {
	q := prepared(b, 100*b.N+100) // b.N is known up front (not b.Loop): the table holds enough
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		got, err := q.Claim(ctx, "bench", 100)
		if err != nil || len(got) != 100 {
			b.Fatalf("claimed %d: %v", len(got), err)
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkCompleteMany100 completes 100 claimed jobs in one statement.
func BenchmarkCompleteMany100(b *testing.B) {
	q := prepared(b, 100*b.N+100)
	ctx := context.Background()
	batches := make([][]*queue.Job[jobs.BenchPayload], 0, b.N)
	for range b.N {
		got, err := q.Claim(ctx, "bench", 100)
		if err != nil {
			b.Fatal(err)
		}
		batches = append(batches, got)
	}
	b.ResetTimer()
	for i := range b.N {
		n, err := q.CompleteMany(ctx, batches[i])
		if err != nil || n != 100 {
			b.Fatalf("completed %d: %v", n, err)
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkWorkerDrain drains b.N due jobs with a Worker's defaults and
// a handler that does nothing: an op is a job, claimed, handed to a
// handler and completed, so allocs/op is what the runtime, the generated
// accessor, sqlc's code and pgx allocate for one job (the fill is not
// counted). The worker stops once the completer has written the last.
func BenchmarkWorkerDrain(b *testing.B) {
	q := prepared(b, b.N)
	var completed atomic.Int64
	done := make(chan struct{})
	w := q.Worker(func(context.Context, *queue.Job[jobs.BenchPayload]) error { return nil },
		queue.Logger(quiet),
		queue.WithHooks(queue.Hooks{Batch: func(_ string, kind string, n int) {
			if kind == "complete" && completed.Add(int64(n)) == int64(b.N) {
				close(done)
			}
		}}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	select {
	case <-done:
	case err := <-errc:
		b.Fatalf("the worker stopped with %d of %d jobs completed: %v", completed.Load(), b.N, err)
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d jobs completed in 5 minutes", completed.Load(), b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPush pushes one job per statement (one transaction each).
func BenchmarkPush(b *testing.B) {
	q := prepared(b, 0)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		if _, err := q.Push(ctx, payload(int64(i))); err != nil {
			b.Fatal(err)
		}
	}
}
