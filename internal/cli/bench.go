package cli

import (
	"context"
	"os"
	"os/signal"
	"runtime/pprof"

	"github.com/queuegen/queuegen/internal/bench"
)

func runBench(c *invocation) error {
	db := c.dbFlag()
	cfg := bench.Config{Out: c.stdout, Progress: c.stderr}
	c.fs.StringVar(&cfg.Workload, "workload", "all", "push, push-many, drain, latency, latency-poll, steady or all")
	c.fs.IntVar(&cfg.Jobs, "jobs", 0, "jobs per workload (default: push 100000, push-many 1000000, drain 200000, latency 1000, latency-poll 20)")
	c.fs.DurationVar(&cfg.Duration, "duration", 0, "how long steady runs (default 60s)")
	c.fs.IntVar(&cfg.Workers, "workers", 0, "pushers (push, push-many: default 8) or the worker's concurrency (drain, steady: default 1000)")
	c.fs.IntVar(&cfg.Batch, "batch", 0, "PushMany batch size (default 100), or the worker's claim and flush batch (drain, steady: default 500)")
	c.fs.IntVar(&cfg.Rate, "rate", 5000, "steady's push rate, jobs/s")
	c.fs.IntVar(&cfg.Claimers, "claimers", 0, "the worker's claim loops (drain, steady: default 2)")
	cpuProfile := c.fs.String("cpuprofile", "", "write a CPU profile of the bench process to this file")
	asJSON := c.jsonFlag()
	if err := c.parse(); err != nil {
		return err
	}
	if err := c.noArgs(); err != nil {
		return err
	}
	cfg.JSON = *asJSON
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return bench.Run(ctx, url.URL, cfg)
}
