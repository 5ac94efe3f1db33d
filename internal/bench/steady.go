package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuegen/queuegen/queue"
)

// runSteady pushes Rate jobs/s (PushMany batches of Batch, every 10ms)
// while a worker of concurrency Workers works them, for Duration. It
// reports the completion rate, the queue depth over time (it must stay
// flat), and the table's dead tuples and size at the end.
func runSteady(ctx context.Context, t target, cfg Config) error {
	var pushed, completed atomic.Int64
	w, _, closeW, err := t.worker(ctx, nil, false,
		queue.Concurrency(cfg.Workers), queue.Claimers(cfg.Claimers), queue.MaxClaim(cfg.Batch), queue.FlushSize(cfg.Batch), queue.Logger(quiet),
		queue.WithHooks(queue.Hooks{Batch: func(_ string, kind string, n int) {
			if kind == "complete" {
				completed.Add(int64(n))
			}
		}}))
	if err != nil {
		return err
	}
	defer closeW()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- w.Run(runCtx) }()

	pushCtx, stopPush := context.WithTimeout(ctx, cfg.Duration)
	defer stopPush()
	var wg sync.WaitGroup
	var pushErr atomic.Value
	const tick = 10 * time.Millisecond
	perTick := max(1, cfg.Rate/int(time.Second/tick))
	wg.Go(func() {
		ticker := time.NewTicker(tick)
		defer ticker.Stop()
		for {
			select {
			case <-pushCtx.Done():
				return
			case <-ticker.C:
			}
			n, err := t.pushMany(ctx, 0, int64(perTick))
			if err != nil {
				pushErr.Store(err)
				return
			}
			pushed.Add(n)
		}
	})
	var depths []int64
	start := time.Now()
	for pushCtx.Err() == nil {
		select {
		case <-pushCtx.Done():
		case <-time.After(time.Second):
			d, err := t.depth(ctx)
			if err != nil {
				return err
			}
			depths = append(depths, d)
			fmt.Fprintf(cfg.Progress, "  steady %4.0fs: %d pushed, %d completed, depth %d\n", time.Since(start).Seconds(), pushed.Load(), completed.Load(), d)
		}
	}
	wg.Wait()
	took := time.Since(start)
	done := completed.Load()
	cancel()
	if err := <-errc; err != nil {
		return err
	}
	if err, _ := pushErr.Load().(error); err != nil {
		return err
	}
	health, err := t.health(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.notes(), "steady: pushed %d at %d jobs/s; depth %v; %s\n", pushed.Load(), cfg.Rate, depths, health)
	cfg.summary("steady", done, took, nil)
	return nil
}
