package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/queuegen/queuegen/queue"
)

// runDrain: Jobs pushed first (not timed), then one worker of concurrency
// Workers with a no-op handler works them all; timed until every job is
// completed and committed (the completer reports a batch only after its
// statement commits; the table is then checked empty).
func runDrain(ctx context.Context, t target, cfg Config) error {
	if err := t.fill(ctx, cfg.Jobs); err != nil {
		return err
	}
	took, err := drainTimed(ctx, cfg, "drain", cfg.Jobs, func(opts ...queue.WorkerOption) (runner, func(), error) {
		w, _, closeW, err := t.worker(ctx, nil, false, opts...)
		return w, closeW, err
	})
	if err != nil {
		return err
	}
	left, err := t.left(ctx)
	if err != nil {
		return err
	}
	if left != 0 {
		return fmt.Errorf("%d jobs left after the drain", left)
	}
	cfg.summary("drain", int64(cfg.Jobs), took, nil)
	return nil
}

// drainTimed runs the worker newWorker builds, with the drain's options
// (Workers, Claimers, Batch: those left 0 are the worker's defaults) and a
// hook counting completions, and times it
// from its start until n jobs are completed and committed; then it stops
// the worker. Jobs it claimed beyond n stay leased.
func drainTimed(ctx context.Context, cfg Config, name string, n int, newWorker func(...queue.WorkerOption) (runner, func(), error)) (time.Duration, error) {
	var completed atomic.Int64
	enough := make(chan struct{})
	var once atomic.Bool
	opts := []queue.WorkerOption{queue.Logger(quiet), queue.WithHooks(queue.Hooks{Batch: func(_ string, kind string, k int) {
		if kind == "complete" && completed.Add(int64(k)) >= int64(n) && once.CompareAndSwap(false, true) {
			close(enough)
		}
	}})}
	if cfg.Workers > 0 {
		opts = append(opts, queue.Concurrency(cfg.Workers))
	}
	if cfg.Claimers > 0 {
		opts = append(opts, queue.Claimers(cfg.Claimers))
	}
	if cfg.Batch > 0 {
		opts = append(opts, queue.MaxClaim(cfg.Batch), queue.FlushSize(cfg.Batch))
	}
	w, closeW, err := newWorker(opts...)
	if err != nil {
		return 0, err
	}
	defer closeW()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := progress(cfg.Progress, name, &completed)
	start := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- w.Run(runCtx) }()
	select {
	case <-enough:
	case err := <-errc:
		stop()
		return 0, fmt.Errorf("worker stopped early: %v", err)
	case <-time.After(10 * time.Minute):
		stop()
		return 0, errTimeout
	}
	took := time.Since(start)
	stop()
	cancel()
	return took, <-errc
}
