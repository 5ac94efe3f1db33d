package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuegen/queuegen/internal/bench/jobs"
)

// Rate is the workload that measures a rate limit held by the database:
// worker processes drain a queue limited to 500 claims a second.
// PostgreSQL only, and not part of "all".
const Rate = "rate"

// rateLimit is bench_rated's rate limit: rateLimit claims a second.
const rateLimit = 500

// runRate measures queue bench_rated (rate: 500 per 1s, on_success: keep):
// it pushes Jobs jobs and starts 4 worker processes of 100 handlers each
// (ChildMain), whose jobs do nothing, and waits until every job is done.
// The jobs' attempted_at are their claims' times: a second line gives the
// most jobs claimed within any one second (the workload fails above 500)
// and the jobs claimed in each whole second from the first claim (mean,
// least and most), the rate the workers got.
func runRate(ctx context.Context, t target, cfg Config) error {
	lt, ok := t.(limitsTarget)
	if !ok { // Run refuses it first
		return errors.New("the rate workload " + postgresOnly[Rate])
	}
	q := jobs.NewBenchRatedQueue(lt.limitedPool())
	if err := pushInBatches(ctx, cfg.Jobs, 10000, func(i int) jobs.BenchRatedPayload { return jobs.BenchRatedPayload{N: int32(i)} }, q.PushMany); err != nil {
		return err
	}
	start := time.Now()
	stop, err := startWorkers(lt, "bench_rated")
	defer stop()
	if err != nil {
		return err
	}
	for {
		var left int
		if err := lt.limitedPool().QueryRow(ctx, `SELECT count(*) FROM `+Schema+`.bench_rated_queue WHERE state <> 'succeeded'`).Scan(&left); err != nil {
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

	// The most claims within one second: for each job, the jobs claimed in
	// the second up to its claim (attempted_at has microseconds).
	var most, seconds int
	var mean, least, busiest float64
	err = lt.limitedPool().QueryRow(ctx, `
WITH claims AS (
    SELECT attempted_at,
           count(*) OVER (ORDER BY attempted_at RANGE BETWEEN interval '999999 microseconds' PRECEDING AND CURRENT ROW) AS window_jobs
    FROM `+Schema+`.bench_rated_queue
), per_second AS (
    SELECT floor(extract(epoch FROM attempted_at - (SELECT min(attempted_at) FROM claims))) AS second, count(*) AS n
    FROM claims
    GROUP BY 1
), whole AS (
    SELECT n FROM per_second WHERE second < (SELECT max(second) FROM per_second)
)
SELECT (SELECT max(window_jobs) FROM claims),
       (SELECT count(*) FROM whole),
       coalesce((SELECT avg(n) FROM whole), 0), coalesce((SELECT min(n) FROM whole), 0), coalesce((SELECT max(n) FROM whole), 0)`).Scan(&most, &seconds, &mean, &least, &busiest)
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.notes(), "  rate: at most %d jobs claimed within one second (limit %d); %d whole seconds: %.0f claimed a second (%.2f× the limit), least %.0f, most %.0f\n",
		most, rateLimit, seconds, mean, mean/rateLimit, least, busiest)
	if most > rateLimit {
		return fmt.Errorf("%d jobs claimed within one second, over the limit of %d", most, rateLimit)
	}
	return nil
}
