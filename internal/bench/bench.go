package bench

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/queue"
)

//go:embed db/migrations/*.sql
var migrations embed.FS

//go:embed db/mysql/migrations/*.sql
var mysqlMigrations embed.FS

// Config is one bench run.
type Config struct {
	// Workload is push, push-many, drain, latency, latency-poll, steady,
	// all (those six), drain-scale, retention, skew, spread, limits or rate
	// (apart from all).
	Workload string
	// Jobs is how many jobs a workload works (push, push-many, drain,
	// latency).
	Jobs int
	// Duration is how long steady runs.
	Duration time.Duration
	// Workers is the pushers' concurrency (push, push-many, steady) or the
	// worker's (drain, steady). The drain's Workers, Batch and Claimers
	// default to the worker's own defaults (a Worker with no options).
	Workers int
	// Batch is PushMany's batch size (push-many, drain's fill, steady).
	Batch int
	// Rate is steady's push rate, in jobs/s.
	Rate int
	// Claimers is the worker's number of claim loops (drain, steady).
	Claimers int
	// Backlogs are drain-scale's backlog sizes; Kept is how many finished
	// jobs its kept case keeps; Hold how long its snapshot case holds a
	// snapshot (see runDrainScale).
	Backlogs []int
	Kept     int
	Hold     time.Duration
	// Tenants is how many tenants spread's and limits' jobs are spread over.
	Tenants int
	// Chart, when set, is the PNG file drain-scale draws its rates in.
	Chart string
	// Out receives the summary lines; Progress a line a second while a
	// workload runs (io.Discard when nil).
	Out, Progress io.Writer
	// JSON writes each workload's summary as one JSON object per line.
	JSON bool

	// database replaces Schema as the bench's database on MySQL and SQL
	// Server, for tests that run beside one another on one server.
	database string
}

// Workloads are the workloads in the order "all" runs them.
var Workloads = []string{"push", "push-many", "drain", "latency", "latency-poll", "steady"}

// postgresOnly are the workloads of PostgreSQL's own features, with what
// they measure.
var postgresOnly = map[string]string{
	Retention: "compares keep with archive, which is PostgreSQL's",
}

// Skew is the workload that measures fair claims (fair_by) and backlogs
// (on PostgreSQL, which has them) against one tenant's backlog; not part
// of "all".
const Skew = "skew"

// Spread is the workload that measures fair claims (fair_by) and
// backlogs (on PostgreSQL) against a backlog spread over 100 tenants; not
// part of "all".
const Spread = "spread"

// Retention is the workload that measures retention removing finished
// jobs by row (on_success: keep) and by partition (on_success: archive);
// PostgreSQL only, and not part of "all".
const Retention = "retention"

// DrainScale is the workload that measures the drain against backlogs of
// millions of jobs, kept history and a held snapshot: it fills tens of
// millions of rows, so "all" leaves it out.
const DrainScale = "drain-scale"

// Schema is the schema (PostgreSQL) or database (MySQL, MariaDB, SQL
// Server) the bench creates, fills and drops.
const Schema = "queuegen_bench"

// Run runs cfg's workloads against the database at address (a
// PostgreSQL, MySQL or SQL Server address, as dburl.Parse reads it): it
// creates the bench schema or database, runs, and drops it again. On SQL
// Server the bench is built and its SQL grammar-checked, but it has never
// run against a server (see msTarget).
func Run(ctx context.Context, address string, cfg Config) error {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	names := []string{cfg.Workload}
	if cfg.Workload == "all" {
		names = Workloads
	}
	for _, n := range names {
		if _, ok := workloads[n]; !ok {
			return fmt.Errorf("unknown workload %q: want one of %v, all, %s, %s, %s, %s, %s or %s", n, Workloads, DrainScale, Retention, Skew, Spread, Limits, Rate)
		}
	}
	d, err := dburl.Parse(address)
	if err != nil {
		return err
	}
	for _, n := range names {
		if why := postgresOnly[n]; why != "" && d.Engine != dburl.PostgreSQL {
			return fmt.Errorf("the %s workload %s: run it on PostgreSQL", n, why)
		}
	}
	conns := max(16, cfg.Workers+8)
	var t target
	switch d.Engine {
	case dburl.MySQL:
		t, err = newMySQL(d, cmp.Or(cfg.database, Schema), conns)
	case dburl.SQLServer:
		t, err = newSQLServer(ctx, d, cmp.Or(cfg.database, Schema), conns)
	default:
		t, err = newPostgres(ctx, d.URL, conns)
	}
	if err != nil {
		return err
	}
	defer t.close()
	for _, name := range names {
		if err := t.setup(ctx); err != nil {
			return fmt.Errorf("bench setup: %w", err)
		}
		err := workloads[name](ctx, t, withDefaults(name, cfg))
		t.teardown()
		if err != nil {
			return fmt.Errorf("bench %s: %w", name, err)
		}
	}
	return nil
}

var workloads = map[string]func(context.Context, target, Config) error{
	"push":         runPush,
	"push-many":    runPushMany,
	"drain":        runDrain,
	"latency":      func(ctx context.Context, t target, c Config) error { return runLatency(ctx, t, c, true) },
	"latency-poll": func(ctx context.Context, t target, c Config) error { return runLatency(ctx, t, c, false) },
	"steady":       runSteady,
	DrainScale:     runDrainScale,
	Retention:      runRetention,
	Skew:           runSkew,
	Spread:         runSpread,
	Limits:         runLimits,
	Rate:           runRate,
}

// withDefaults fills in what cfg leaves zero, per workload.
func withDefaults(workload string, cfg Config) Config {
	jobs := map[string]int{"push": 100000, "push-many": 1000000, "drain": 200000, DrainScale: 100000, Retention: 10000000, Skew: 100000, Spread: 1000000, Limits: 100000, Rate: 5000, "latency": 1000, "latency-poll": 20, "steady": 0}
	workers := map[string]int{"push": 8, "push-many": 8, DrainScale: 1000, Skew: 1000, Spread: 1000, "latency": 1, "latency-poll": 1, "steady": 1000}
	batch := map[string]int{"push-many": 100, DrainScale: 500, Skew: 500, Spread: 500, Retention: 10000, "steady": 500}
	if cfg.Jobs == 0 {
		cfg.Jobs = jobs[workload]
	}
	if cfg.Workers == 0 {
		cfg.Workers = workers[workload]
	}
	if cfg.Batch == 0 && workload != "drain" {
		cfg.Batch = max(1, batch[workload])
	}
	if cfg.Duration == 0 {
		cfg.Duration = time.Minute
	}
	if cfg.Rate == 0 {
		cfg.Rate = 5000
	}
	if cfg.Claimers == 0 && workload != "drain" {
		cfg.Claimers = 2
	}
	if cfg.Backlogs == nil {
		cfg.Backlogs = []int{1000000, 10000000}
	}
	if cfg.Kept == 0 {
		cfg.Kept = 5000000
	}
	if cfg.Hold == 0 {
		cfg.Hold = time.Minute
	}
	if cfg.Tenants == 0 {
		cfg.Tenants = 100
	}
	return cfg
}

// quiet discards the runtime's logs: the bench prints its own.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// summary prints the one line each workload ends with.
func (cfg Config) summary(workload string, jobs int64, took time.Duration, lat *latencies) {
	rate := float64(jobs) / took.Seconds()
	if cfg.JSON {
		out := map[string]any{"workload": workload, "jobs": jobs, "seconds": took.Seconds(), "jobs_per_second": rate}
		if lat != nil && len(lat.d) > 0 {
			out["p50_ms"], out["p99_ms"] = ms(lat.quantile(0.5)), ms(lat.quantile(0.99))
		}
		json.NewEncoder(cfg.Out).Encode(out)
		return
	}
	line := fmt.Sprintf("bench %s: %d jobs in %.3f s = %.0f jobs/s", workload, jobs, took.Seconds(), rate)
	if lat != nil && len(lat.d) > 0 {
		line += fmt.Sprintf(" p50=%.3f p99=%.3f", ms(lat.quantile(0.5)), ms(lat.quantile(0.99)))
	}
	fmt.Fprintln(cfg.Out, line)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencies collects durations from many goroutines.
type latencies struct {
	d []time.Duration
}

func (l *latencies) quantile(q float64) time.Duration {
	s := slices.Clone(l.d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// progress prints a line a second while a workload runs, until stop is
// called.
func progress(w io.Writer, workload string, done *atomic.Int64) (stop func()) {
	start := time.Now()
	ticker := time.NewTicker(time.Second)
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-quit:
				ticker.Stop()
				return
			case <-ticker.C:
				n := done.Load()
				fmt.Fprintf(w, "  %s %4.0fs: %d jobs, %.0f jobs/s\n", workload, time.Since(start).Seconds(), n, float64(n)/time.Since(start).Seconds())
			}
		}
	}()
	return func() { close(quit); <-finished }
}

var errTimeout = errors.New("timed out")

// notes is where a workload's remarks beside its summary go: the summary
// stream, unless that is JSON.
func (cfg Config) notes() io.Writer {
	if cfg.JSON {
		return cfg.Progress
	}
	return cfg.Out
}

// pushInBatches pushes jobs 0 to n-1, made by payload, with pushMany, size
// jobs a call: how the workloads fill a queue before they time anything.
func pushInBatches[P any](ctx context.Context, n, size int, payload func(i int) P, pushMany func(context.Context, []P, ...queue.PushOption) (int64, error)) error {
	for from := 0; from < n; from += size {
		batch := make([]P, 0, min(size, n-from))
		for i := from; i < min(from+size, n); i++ {
			batch = append(batch, payload(i))
		}
		if _, err := pushMany(ctx, batch); err != nil {
			return err
		}
	}
	return nil
}

// childWorker is c's worker, on the engine of c's URL, and a close of its
// connections (see ChildMain). Like Run, it is where the bench picks its
// engine's code.
func childWorker(ctx context.Context, c child) (runner, func(), error) {
	d, err := dburl.Parse(c.URL)
	if err != nil {
		return nil, nil, err
	}
	switch d.Engine {
	case dburl.MySQL:
		return myChildWorker(d, c)
	case dburl.SQLServer:
		return msChildWorker(c)
	}
	return pgChildWorker(ctx, c)
}
