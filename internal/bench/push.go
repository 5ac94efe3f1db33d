package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// runPush: Jobs single pushes from Workers goroutines, one transaction
// each; p50/p99 of a push.
func runPush(ctx context.Context, t target, cfg Config) error {
	// Each pusher holds a connection of its own, as pgbench's and
	// mariadb-slap's clients do: a pool's acquire and release per push
	// would be measured too.
	push, release, err := t.pushers(ctx, cfg.Workers)
	if err != nil {
		return err
	}
	defer release()
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
				if err := push[w](ctx, n); err != nil {
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

// runPushMany: Jobs pushed with PushMany (COPY on PostgreSQL, multi-row
// INSERTs on MySQL) in batches of Batch, from Workers goroutines; p50/p99
// of a batch.
func runPushMany(ctx context.Context, t target, cfg Config) error {
	var next, done atomic.Int64
	lat := make([]latencies, cfg.Workers)
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	stop := progress(cfg.Progress, "push-many", &done)
	start := time.Now()
	for w := range cfg.Workers {
		wg.Go(func() {
			for {
				from := next.Add(int64(cfg.Batch)) - int64(cfg.Batch)
				if from >= int64(cfg.Jobs) {
					return
				}
				began := time.Now()
				n, err := t.pushMany(ctx, from, min(from+int64(cfg.Batch), int64(cfg.Jobs)))
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				lat[w].d = append(lat[w].d, time.Since(began))
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
