package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/internal/bench/jobs"
	"github.com/queuegen/queuegen/queue"
)

// runLatency pushes one job at a time into an idle queue whose worker is
// waiting, and measures from the push's commit (Push returning) to the
// handler starting: woken by LISTEN/NOTIFY (notify true) or by polling
// only (every second, the default).
func runLatency(ctx context.Context, pool *pgxpool.Pool, cfg Config, notify bool) error {
	name, n := "latency", cfg.Jobs
	started := make(chan time.Time, 1)
	opts := []queue.WorkerOption{queue.Concurrency(1), queue.Logger(quiet)}
	var w interface{ Run(context.Context) error }
	var push func(int64) error
	if notify {
		listener := queue.NewListener(pool, quiet)
		defer listener.Close()
		q := jobs.NewBenchNotifyQueue(pool)
		w = q.Worker(markStart[jobs.BenchNotifyPayload](started), append(opts, queue.WithListener(listener))...)
		push = func(i int64) error { _, err := q.Push(ctx, jobs.BenchNotifyPayload(payload(i))); return err }
	} else {
		name, n = "latency-poll", min(n, 20) // a poll a second: keep it short
		q := jobs.NewBenchQueue(pool)
		w = q.Worker(markStart[jobs.BenchPayload](started), opts...)
		push = func(i int64) error { _, err := q.Push(ctx, payload(i)); return err }
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- w.Run(runCtx) }()
	if notify {
		// Let the listener connect before the first push.
		if err := waitListening(ctx, pool); err != nil {
			return err
		}
	}
	var done atomic.Int64
	stop := progress(cfg.Progress, name, &done)
	var lat latencies
	start := time.Now()
	for i := range int64(n) {
		if err := push(i); err != nil {
			stop()
			return err
		}
		committed := time.Now()
		select {
		case s := <-started:
			lat.d = append(lat.d, max(0, s.Sub(committed)))
		case <-time.After(30 * time.Second):
			stop()
			return fmt.Errorf("job %d was not started within 30s", i)
		}
		done.Add(1)
		time.Sleep(5 * time.Millisecond) // idle between jobs
	}
	took := time.Since(start)
	stop()
	cancel()
	if err := <-errc; err != nil {
		return err
	}
	cfg.summary(name, done.Load(), took, &lat)
	return nil
}

func waitListening(ctx context.Context, pool *pgxpool.Pool) error {
	for range 500 {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'queuegen-listener' AND datname = current_database() AND query LIKE 'LISTEN%'").Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("the listener did not start")
}

// markStart is a handler that reports when it starts.
func markStart[P any](started chan<- time.Time) queue.Handler[P] {
	return func(context.Context, *queue.Job[P]) error {
		started <- time.Now()
		return nil
	}
}
