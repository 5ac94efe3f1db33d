package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/internal/bench/jobs"
)

func payload(n int64) jobs.BenchPayload {
	return jobs.BenchPayload{Recipient: "a@example.com", N: int32(n)}
}

// runPush: Jobs single pushes from Workers goroutines, one transaction
// each; p50/p99 of a push.
func runPush(ctx context.Context, pool *pgxpool.Pool, cfg Config) error {
	// Each pusher holds a connection of its own, as pgbench's clients do:
	// a pool's acquire and release per push would be measured too.
	conns := make([]*jobs.BenchQueue, cfg.Workers)
	for i := range conns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer c.Release()
		conns[i] = jobs.NewBenchQueue(c.Conn())
	}
	var next, done atomic.Int64
	lat := make([]latencies, cfg.Workers)
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	stop := progress(cfg.Progress, "push", &done)
	start := time.Now()
	for w := range cfg.Workers {
		wg.Go(func() {
			for n := next.Add(1); n <= int64(cfg.Jobs); n = next.Add(1) {
				t := time.Now()
				if _, err := conns[w].Push(ctx, payload(n)); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				lat[w].d = append(lat[w].d, time.Since(t))
				done.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	stop()
	if firstErr != nil {
		return firstErr
	}
	var all latencies
	for _, l := range lat {
		all.d = append(all.d, l.d...)
	}
	cfg.summary("push", done.Load(), took, &all)
	return nil
}

// runPushMany: Jobs pushed with PushMany (COPY) in batches of Batch, from
// Workers goroutines; p50/p99 of a batch.
func runPushMany(ctx context.Context, pool *pgxpool.Pool, cfg Config) error {
	q := jobs.NewBenchQueue(pool)
	var next, done atomic.Int64
	lat := make([]latencies, cfg.Workers)
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	stop := progress(cfg.Progress, "push-many", &done)
	start := time.Now()
	for w := range cfg.Workers {
		wg.Go(func() {
			batch := make([]jobs.BenchPayload, 0, cfg.Batch)
			for {
				from := next.Add(int64(cfg.Batch)) - int64(cfg.Batch)
				if from >= int64(cfg.Jobs) {
					return
				}
				batch = batch[:0]
				for n := from; n < min(from+int64(cfg.Batch), int64(cfg.Jobs)); n++ {
					batch = append(batch, payload(n))
				}
				t := time.Now()
				n, err := q.PushMany(ctx, batch)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				lat[w].d = append(lat[w].d, time.Since(t))
				done.Add(n)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	stop()
	if firstErr != nil {
		return firstErr
	}
	var all latencies
	for _, l := range lat {
		all.d = append(all.d, l.d...)
	}
	cfg.summary("push-many", done.Load(), took, &all)
	return nil
}

// fill pushes n jobs quickly, untimed.
func fill(ctx context.Context, pool *pgxpool.Pool, n int) error {
	q := jobs.NewBenchQueue(pool)
	batch := make([]jobs.BenchPayload, 0, 10000)
	for i := 0; i < n; i += len(batch) {
		batch = batch[:0]
		for j := i; j < min(i+10000, n); j++ {
			batch = append(batch, payload(int64(j)))
		}
		if _, err := q.PushMany(ctx, batch); err != nil {
			return err
		}
	}
	_, err := pool.Exec(ctx, "VACUUM ANALYZE "+Schema+".bench_queue")
	return err
}
