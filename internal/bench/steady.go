package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/internal/bench/jobs"
	"github.com/queuegen/queuegen/queue"
)

// runSteady pushes Rate jobs/s (PushMany batches of Batch, every 10ms)
// while a worker of concurrency Workers works them, for Duration. It
// reports the completion rate, the queue depth over time (it must stay
// flat), and the table's dead tuples and size at the end.
func runSteady(ctx context.Context, pool *pgxpool.Pool, cfg Config) error {
	q := jobs.NewBenchQueue(pool)
	var pushed, completed atomic.Int64
	w := q.Worker(func(context.Context, *queue.Job[jobs.BenchPayload]) error { return nil },
		queue.Concurrency(cfg.Workers), queue.Claimers(cfg.Claimers), queue.MaxClaim(cfg.Batch), queue.FlushSize(cfg.Batch), queue.Logger(quiet),
		queue.WithHooks(queue.Hooks{Batch: func(_ string, kind string, n int) {
			if kind == "complete" {
				completed.Add(int64(n))
			}
		}}))
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
		t := time.NewTicker(tick)
		defer t.Stop()
		batch := make([]jobs.BenchPayload, perTick)
		for i := range batch {
			batch[i] = payload(int64(i))
		}
		for {
			select {
			case <-pushCtx.Done():
				return
			case <-t.C:
			}
			if _, err := q.PushMany(ctx, batch); err != nil {
				pushErr.Store(err)
				return
			}
			pushed.Add(int64(len(batch)))
		}
	})
	var depths []int64
	start := time.Now()
	for pushCtx.Err() == nil {
		select {
		case <-pushCtx.Done():
		case <-time.After(time.Second):
			d, err := q.Depth(ctx)
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
	var dead, live, size int64
	pool.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	if err := pool.QueryRow(ctx, `SELECT n_dead_tup, n_live_tup, pg_total_relation_size(relid)
FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'bench_queue'`, Schema).Scan(&dead, &live, &size); err != nil {
		return err
	}
	fmt.Fprintf(cfg.notes(), "steady: pushed %d at %d jobs/s; depth %v; dead tuples %d, live %d, table with indexes %.1f MB\n",
		pushed.Load(), cfg.Rate, depths, dead, live, float64(size)/(1<<20))
	var autovacuum string
	if err := pool.QueryRow(ctx, "SHOW autovacuum").Scan(&autovacuum); err == nil && autovacuum != "on" {
		fmt.Fprintln(cfg.notes(), "steady: WARNING: autovacuum is off on this server, so nothing removes dead tuples and the table grows without bound; the queue tables' autovacuum settings need it on")
	}
	cfg.summary("steady", done, took, nil)
	return nil
}
