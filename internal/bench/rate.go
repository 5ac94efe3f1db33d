package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/queuegen/queuegen/internal/bench/jobs"
	"github.com/queuegen/queuegen/internal/bench/myjobs"
)

// Rate is the workload that measures a rate limit held by the database:
// worker processes drain a queue limited to 500 claims a second.
// PostgreSQL, MySQL, MariaDB and SQL Server; not part of "all".
const Rate = "rate"

// rateLimit is bench_rated's rate limit: rateLimit claims a second.
const rateLimit = 500

// rateTarget is a target whose engine has rate limits.
type rateTarget interface {
	limitsTarget
	// pushRated pushes n jobs into bench_rated.
	pushRated(ctx context.Context, n int) error
	// ratedLeft counts bench_rated's jobs not yet succeeded.
	ratedLeft(ctx context.Context) (int, error)
	// claimTimes are bench_rated's jobs' attempted_at (their claims'
	// times, to the microsecond), in order.
	claimTimes(ctx context.Context) ([]time.Time, error)
}

// runRate measures queue bench_rated (rate: 500 per 1s, on_success: keep):
// it pushes Jobs jobs and starts 4 worker processes of 100 handlers each
// (ChildMain), whose jobs do nothing, and waits until every job is done.
// The jobs' attempted_at are their claims' times: a second line gives the
// most jobs claimed within any one second (the workload fails above 500)
// and the jobs claimed in each whole second from the first claim (mean,
// least and most), the rate the workers got.
func runRate(ctx context.Context, t target, cfg Config) error {
	lt, ok := t.(rateTarget)
	if !ok { // Run refuses it first
		return errors.New("the rate workload measures a rate limit, which this engine lacks")
	}
	if err := lt.pushRated(ctx, cfg.Jobs); err != nil {
		return err
	}
	start := time.Now()
	stop, err := startWorkers(lt, "bench_rated")
	defer stop()
	if err != nil {
		return err
	}
	for {
		left, err := lt.ratedLeft(ctx)
		if err != nil {
			return err
		}
		if left == 0 {
			break
		}
		fmt.Fprintf(cfg.Progress, "rate: %d jobs left\n", left)
		time.Sleep(200 * time.Millisecond)
	}
	took := time.Since(start)
	stop()
	cfg.summary(Rate, int64(cfg.Jobs), took, nil)

	claims, err := lt.claimTimes(ctx)
	if err != nil {
		return err
	}
	w := claimWindows(claims)
	fmt.Fprintf(cfg.notes(), "  rate: at most %d jobs claimed within one second (limit %d); %d whole seconds: %.0f claimed a second (%.2f× the limit), least %d, most %d\n",
		w.most, rateLimit, w.seconds, w.mean, w.mean/rateLimit, w.least, w.busiest)
	if w.most > rateLimit {
		return fmt.Errorf("%d jobs claimed within one second, over the limit of %d", w.most, rateLimit)
	}
	return nil
}

// windows are a rate run's claims counted by the second.
type windows struct {
	// most is the most claims within any one second: for each claim, the
	// claims in the second up to it (the 999,999 µs before it and itself).
	most int
	// seconds are the whole seconds from the first claim (the last,
	// partial one left out); mean, least and busiest their claims.
	seconds        int
	mean           float64
	least, busiest int
}

// claimWindows counts claims (in order) by the second.
func claimWindows(claims []time.Time) windows {
	var w windows
	if len(claims) == 0 {
		return w
	}
	from := 0
	for i, c := range claims {
		for c.Sub(claims[from]) >= time.Second {
			from++
		}
		w.most = max(w.most, i-from+1)
	}
	per := make([]int, int(claims[len(claims)-1].Sub(claims[0])/time.Second)+1)
	for _, c := range claims {
		per[c.Sub(claims[0])/time.Second]++
	}
	whole := per[:len(per)-1]
	w.seconds = len(whole)
	if w.seconds == 0 {
		return w
	}
	w.least, w.busiest = slices.Min(whole), slices.Max(whole)
	sum := 0
	for _, n := range whole {
		sum += n
	}
	w.mean = float64(sum) / float64(w.seconds)
	return w
}

func (t *pgTarget) pushRated(ctx context.Context, n int) error {
	return pushInBatches(ctx, n, 10000, func(i int) jobs.BenchRatedPayload { return jobs.BenchRatedPayload{N: int32(i)} },
		jobs.NewBenchRatedQueue(t.pool).PushMany)
}

func (t *pgTarget) ratedLeft(ctx context.Context) (int, error) {
	var n int
	err := t.pool.QueryRow(ctx, `SELECT count(*) FROM `+Schema+`.bench_rated_queue WHERE state <> 'succeeded'`).Scan(&n)
	return n, err
}

func (t *pgTarget) claimTimes(ctx context.Context) ([]time.Time, error) {
	rows, err := t.pool.Query(ctx, `SELECT attempted_at FROM `+Schema+`.bench_rated_queue ORDER BY attempted_at`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var claims []time.Time
	for rows.Next() {
		var at time.Time
		if err := rows.Scan(&at); err != nil {
			return nil, err
		}
		claims = append(claims, at)
	}
	return claims, rows.Err()
}

func (t *myTarget) pushRated(ctx context.Context, n int) error {
	return pushInBatches(ctx, n, 1000, func(i int) myjobs.BenchRatedPayload { return myjobs.BenchRatedPayload{N: int32(i)} },
		myjobs.NewBenchRatedQueue(t.db).PushMany)
}

func (t *myTarget) ratedLeft(ctx context.Context) (int, error) {
	var n int
	err := t.db.QueryRowContext(ctx, `SELECT count(*) FROM bench_rated_queue WHERE state <> 'succeeded'`).Scan(&n)
	return n, err
}

func (t *myTarget) claimTimes(ctx context.Context) ([]time.Time, error) {
	rows, err := t.db.QueryContext(ctx, `SELECT attempted_at FROM bench_rated_queue ORDER BY attempted_at`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var claims []time.Time
	for rows.Next() {
		var at time.Time
		if err := rows.Scan(&at); err != nil {
			return nil, err
		}
		claims = append(claims, at)
	}
	return claims, rows.Err()
}
