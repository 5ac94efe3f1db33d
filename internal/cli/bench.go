package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/queuegen/queuegen/internal/bench"
)

func runBench(c *invocation) error {
	db := c.dbFlag()
	cfg := bench.Config{Out: c.stdout, Progress: c.stderr}
	c.fs.StringVar(&cfg.Workload, "workload", "all", "push, push-many, drain, latency, latency-poll, steady, all (those six), drain-scale, retention, skew, spread, limits or rate")
	c.fs.IntVar(&cfg.Jobs, "jobs", 0, "jobs per workload (default: push 100000, push-many 1000000, drain 200000, drain-scale 100000, retention 10000000, skew 100000 (tenant a's backlog), spread 1000000, limits 100000, rate 5000, latency 1000, latency-poll 20)")
	c.fs.DurationVar(&cfg.Duration, "duration", 0, "how long steady runs (default 60s)")
	c.fs.IntVar(&cfg.Workers, "workers", 0, "pushers (push, push-many: default 8) or the worker's concurrency (drain: a Worker's default, 100; steady: 1000)")
	c.fs.IntVar(&cfg.Batch, "batch", 0, "PushMany batch size (default 100), the worker's claim and flush batch (drain: a Worker's defaults, 500 each; steady: 500), or Purge's (retention: default 10000)")
	c.fs.IntVar(&cfg.Rate, "rate", 5000, "steady's push rate, jobs/s")
	c.fs.IntVar(&cfg.Claimers, "claimers", 0, "the worker's claim loops (drain: a Worker's default, 2; steady: 2)")
	backlogs := c.fs.String("backlogs", "1000000,10000000", "drain-scale: the backlogs to drain --jobs from, comma-separated (each at least --jobs)")
	c.fs.IntVar(&cfg.Kept, "kept", 5000000, "drain-scale: finished jobs kept in the table of its kept case")
	c.fs.DurationVar(&cfg.Hold, "hold", time.Minute, "drain-scale: how long its snapshot case holds a snapshot open")
	c.fs.IntVar(&cfg.Tenants, "tenants", 100, "spread and limits: how many tenants their jobs are spread over")
	c.fs.StringVar(&cfg.Chart, "chart", "", "drain-scale: draw the cases' rates as a bar chart in this PNG file")
	cpuProfile := c.fs.String("cpuprofile", "", "write a CPU profile of the bench process to this file")
	memProfile := c.fs.String("memprofile", "", "write an allocation profile of the bench process to this file at the end (go tool pprof -sample_index=alloc_space)")
	asJSON := c.jsonFlag()
	err := c.parse()
	if err == nil {
		err = c.noArgs()
	}
	if err != nil {
		return err
	}
	cfg.JSON = *asJSON
	if cfg.Backlogs, err = positiveInts("--backlogs", *backlogs); err != nil {
		return err
	}
	if cfg.Kept < 0 || cfg.Hold < 0 || cfg.Tenants < 0 {
		return fmt.Errorf("--kept, --hold and --tenants must not be negative")
	}
	url, err := c.databaseURL(*db)
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var allocs *os.File // created now, so that a bad path fails before the bench runs
	if *memProfile != "" {
		if allocs, err = os.Create(*memProfile); err != nil {
			return err
		}
		defer allocs.Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := bench.Run(ctx, url.URL, cfg); err != nil {
		return err
	}
	if allocs != nil {
		// Every allocation since the process started, sampled.
		if err := pprof.Lookup("allocs").WriteTo(allocs, 0); err != nil {
			return err
		}
		return allocs.Close()
	}
	return nil
}

// positiveInts reads a comma-separated list of positive integers.
func positiveInts(flag, list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive integer", flag, f)
		}
		out = append(out, n)
	}
	return out, nil
}
