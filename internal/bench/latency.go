package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/queuegen/queuegen/queue"
)

// runLatency pushes one job at a time into an idle queue whose worker is
// waiting, and measures from the push's commit (Push returning) to the
// handler starting: woken (notify true) by LISTEN/NOTIFY on PostgreSQL
// or, on MySQL, by the in-process wake of a push through the same
// process; or by polling only (every second, the default).
func runLatency(ctx context.Context, t target, cfg Config, notify bool) error {
	name, n := "latency", cfg.Jobs
	if !notify {
		name, n = "latency-poll", min(n, 20) // a poll a second: keep it short
	}
	started := make(chan time.Time, 1)
	w, push, closeW, err := t.worker(ctx, func() { started <- time.Now() }, notify, queue.Concurrency(1), queue.Logger(quiet))
	if err != nil {
		return err
	}
	defer closeW()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- w.Run(runCtx) }()
	if r, ok := w.(interface{ ready(context.Context) error }); ok {
		// Let the listener connect before the first push.
		if err := r.ready(ctx); err != nil {
			return err
		}
	}
	var done atomic.Int64
	stop := progress(cfg.Progress, name, &done)
	var lat latencies
	start := time.Now()
	for i := range int64(n) {
		if err := push(ctx, i); err != nil {
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
