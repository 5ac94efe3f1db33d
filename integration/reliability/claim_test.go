package reliability_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/queue"
)

// TestConcurrentClaimers: 16 goroutines, each its own node on its own
// connection, claim small batches from one queue at once and complete
// what they claim, until the queue is empty. The leases outlast the
// scenario, so nothing may be claimed twice: every job is claimed exactly
// once, at attempt 1, and completed exactly once. On every engine (on
// MySQL the claim is SELECT … FOR UPDATE SKIP LOCKED and an UPDATE in a
// short transaction, retried on deadlock).
func TestConcurrentClaimers(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		tg := prepare(t, engine, "")
		const claimers, batch = 16, 4
		if engine == postgres {
			// pgxpool's default is four connections on two cores: the
			// claims must not queue for connections.
			cfg, err := pgxpool.ParseConfig(tg.address)
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = 2 * claimers
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			tg = tg.withPool(pool)
		}
		total := scale(3000, 30000)
		pushWork(t, tg, total)

		var (
			mu                sync.Mutex
			claimed           = map[int64]int{} // claims per job
			laterAttempts     int               // jobs claimed at an attempt > 1
			claims, empty     atomic.Int64
			claimErrs, misses atomic.Int64
			firstErr          atomic.Value
		)
		deadline := time.Now().Add(2 * time.Minute)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range claimers {
			node := fmt.Sprintf("claimer-%02d", i)
			wg.Go(func() {
				<-start
				for time.Now().Before(deadline) {
					js, err := tg.work.claim(ctx, node, batch, queue.LeaseFor(10*time.Minute))
					if err != nil {
						claimErrs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
						time.Sleep(5 * time.Millisecond)
						continue
					}
					if len(js) == 0 {
						empty.Add(1)
						// Rows other claimers hold locked are skipped; none
						// left available means the queue is drained.
						if n, err := tg.queryInt(ctx, "SELECT count(*) FROM work_queue WHERE state = 'available'"); err == nil && n == 0 {
							return
						}
						continue
					}
					claims.Add(1)
					mu.Lock()
					for _, j := range js {
						claimed[j.ID]++
						if j.Attempt != 1 {
							laterAttempts++
						}
					}
					mu.Unlock()
					for _, j := range js {
						record(ctx, tg, "work_queue", j.ID, j.Attempt, node)
					}
					for {
						n, err := tg.work.completeMany(ctx, js)
						if err == nil {
							misses.Add(int64(len(js)) - n)
							break
						}
						firstErr.CompareAndSwap(nil, err.Error())
						time.Sleep(5 * time.Millisecond)
					}
				}
			})
		}
		began := time.Now()
		close(start)
		wg.Wait()
		took := time.Since(began)
		waitFinished(t, tg, "work_queue", 10*time.Second)

		twice, never := 0, total-len(claimed)
		for _, n := range claimed {
			if n > 1 {
				twice++
			}
		}
		if twice != 0 || never != 0 || laterAttempts != 0 {
			t.Errorf("%d jobs claimed more than once, %d never, %d at an attempt after the first; want each claimed once", twice, never, laterAttempts)
		}
		if misses.Load() != 0 {
			t.Errorf("%d completions found their job no longer held: a job was claimed from under its holder", misses.Load())
		}
		if e := claimErrs.Load(); e != 0 {
			t.Logf("%d claims failed and were retried; first error: %v", e, firstErr.Load())
		}
		check(t, tg, "concurrent-claimers", tally(t, tg, "work_queue", total), exactlyOnce,
			fmt.Sprintf("%d claimers, %d claims of up to %d (%d claimed twice), %d empty, %d failed and retried, %.0f jobs/s",
				claimers, claims.Load(), batch, twice, empty.Load(), claimErrs.Load(), float64(total)/took.Seconds()))
	})
}
