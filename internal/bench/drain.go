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
	var completed atomic.Int64
	allDone := make(chan struct{})
	w, _, closeW, err := t.worker(ctx, nil, false,
		queue.Concurrency(cfg.Workers), queue.Claimers(cfg.Claimers), queue.MaxClaim(cfg.Batch), queue.FlushSize(cfg.Batch), queue.Logger(quiet),
		queue.WithHooks(queue.Hooks{Batch: func(_ string, kind string, n int) {
			if kind == "complete" && completed.Add(int64(n)) == int64(cfg.Jobs) {
				close(allDone)
			}
		}}))
	if err != nil {
		return err
	}
	defer closeW()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := progress(cfg.Progress, "drain", &completed)
	start := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- w.Run(runCtx) }()
	select {
	case <-allDone:
	case err := <-errc:
		stop()
		return fmt.Errorf("worker stopped early: %v", err)
	case <-time.After(10 * time.Minute):
		stop()
		return errTimeout
	}
	took := time.Since(start)
	stop()
	cancel()
	if err := <-errc; err != nil {
		return err
	}
	left, err := t.left(ctx)
	if err != nil {
		return err
	}
	if left != 0 {
		return fmt.Errorf("%d jobs left after the drain", left)
	}
	cfg.summary("drain", completed.Load(), took, nil)
	return nil
}
