package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"

	"github.com/queuegen/queuegen/internal/bench"
)

func runBench(args []string, stdout, stderr io.Writer) error {
	fs, _ := flags("bench", stderr)
	db := fs.String("db", os.Getenv("DATABASE_URL"), "the database URL (default $DATABASE_URL); the bench creates and drops schema "+bench.Schema)
	cfg := bench.Config{Out: stdout}
	fs.StringVar(&cfg.Workload, "workload", "all", "push, push-many, drain, latency, latency-poll, steady or all")
	fs.IntVar(&cfg.Jobs, "jobs", 0, "jobs per workload (default: push 100000, push-many 1000000, drain 200000, latency 1000, latency-poll 20)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "how long steady runs (default 60s)")
	fs.IntVar(&cfg.Workers, "workers", 0, "pushers (push, push-many: default 8) or the worker's concurrency (drain, steady: default 1000)")
	fs.IntVar(&cfg.Batch, "batch", 0, "PushMany batch size (default 100), or the worker's claim and flush batch (drain, steady: default 500)")
	fs.IntVar(&cfg.Rate, "rate", 5000, "steady's push rate, jobs/s")
	fs.IntVar(&cfg.Claimers, "claimers", 0, "the worker's claim loops (drain, steady: default 2)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the bench process to this file")
	if err := parse(fs, args); err != nil {
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
	if *db == "" {
		return usageError{errors.New("--db URL is required (or set DATABASE_URL)")}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return bench.Run(ctx, *db, cfg)
}
