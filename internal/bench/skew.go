package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuegen/queuegen/internal/bench/jobs"
	"github.com/queuegen/queuegen/internal/bench/myjobs"
	"github.com/queuegen/queuegen/queue"
)

// skewTarget is a target whose engine has fair claims (fair_by):
// PostgreSQL, MySQL, MariaDB and SQL Server.
type skewTarget interface {
	// claimModes are the modes the engine's bench queues have: all three
	// on PostgreSQL and SQL Server; ordered and fair on MySQL, which has
	// no backlog.
	claimModes() []claimMode
	// pushTenant pushes n jobs into mode's queue, in batches, job i of
	// tenant(i).
	pushTenant(ctx context.Context, mode claimMode, tenant func(i int) string, n int) error
	// tenantWorker is a worker of mode's queue whose handler calls
	// started with the job's tenant.
	tenantWorker(mode claimMode, started func(tenant string), opts ...queue.WorkerOption) runner
}

// claimMode is how a queue of skew and spread takes tenants' jobs.
type claimMode string

// The queues skew and spread compare: bench_tenant, claimed in order;
// bench_fair, claimed fairly (fair_by, one stage); bench_backlog, whose
// scheduler step moves jobs fairly from its backlog (two stages).
const (
	ordered claimMode = "ordered"
	fair    claimMode = "fair"
	backlog claimMode = "backlog"
)

var claimModes = []claimMode{ordered, fair, backlog}

// skewTenants and skewEach are skew's small tenants: 50 of 20 jobs each.
const skewTenants, skewEach = 50, 20

// runSkew measures what a fair claim buys when one tenant's backlog
// arrives first: tenant a pushes Jobs jobs, then 50 other tenants 20 jobs
// each, and one worker drains them all: from a queue claimed in order,
// from a fair_by queue, and from a fair_by queue with a backlog (where the
// engine has backlogs: PostgreSQL). The
// summary lines' p50 and p99 are the small tenants' jobs' waits (from the
// drain's start to their handler starting); a last line gives the fair
// drains' rates as ratios of the ordered one's.
func runSkew(ctx context.Context, t target, cfg Config) error {
	return compareModes(ctx, t, cfg, Skew, func(push func(tenant func(int) string, n int) error) error {
		if err := push(func(int) string { return "a" }, cfg.Jobs); err != nil {
			return err
		}
		for i := range skewTenants {
			if err := push(func(int) string { return fmt.Sprintf("b%02d", i) }, skewEach); err != nil {
				return err
			}
		}
		return nil
	}, cfg.Jobs+skewTenants*skewEach, func(tenant string) bool { return tenant != "a" }, skewTenants*skewEach)
}

// runSpread measures the fair claims where they cost most: Jobs jobs
// spread evenly over Tenants tenants (default 100) and interleaved, as
// their pushes would arrive (job i is tenant i mod Tenants's), so that
// every claim finds every tenant with due jobs, each tenant's jobs on pages of their own, drained
// the three ways skew drains them. The summary
// lines' p50 and p99 are every job's wait; the last line gives the fair
// drains' rates as ratios of the ordered one's.
func runSpread(ctx context.Context, t target, cfg Config) error {
	each := max(cfg.Jobs/cfg.Tenants, 1)
	return compareModes(ctx, t, cfg, Spread, func(push func(tenant func(int) string, n int) error) error {
		return push(func(i int) string { return fmt.Sprintf("t%04d", i%cfg.Tenants) }, each*cfg.Tenants)
	}, each*cfg.Tenants, func(string) bool { return true }, each*cfg.Tenants)
}

// compareModes fills each mode's queue with fill, drains its total jobs
// with one worker, and reports the waits of the jobs whose tenant counts
// (want of them must run) and each fair mode's rate against the ordered
// one's.
func compareModes(ctx context.Context, t target, cfg Config, workload string, fill func(push func(tenant func(int) string, n int) error) error,
	total int, counts func(tenant string) bool, want int) error {
	st, ok := t.(skewTarget)
	if !ok { // Run refuses it first
		return errors.New("the " + workload + " workload measures fair_by, which this engine lacks")
	}
	rates := map[claimMode]float64{}
	for _, mode := range st.claimModes() {
		name := workload + "/" + string(mode)
		if err := t.setup(ctx); err != nil {
			return err
		}
		if err := fill(func(tenant func(int) string, n int) error { return st.pushTenant(ctx, mode, tenant, n) }); err != nil {
			return err
		}
		var mu sync.Mutex
		var waits latencies
		var start atomic.Pointer[time.Time]
		started := func(tenant string) {
			if !counts(tenant) {
				return
			}
			since := time.Since(*start.Load())
			mu.Lock()
			waits.d = append(waits.d, since)
			mu.Unlock()
		}
		took, err := drainTimed(ctx, cfg, name, total, func(opts ...queue.WorkerOption) (runner, func(), error) {
			now := time.Now()
			start.Store(&now)
			return st.tenantWorker(mode, started, opts...), func() {}, nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if len(waits.d) != want {
			return fmt.Errorf("%s: %d of the jobs timed ran, want %d", name, len(waits.d), want)
		}
		cfg.summary(name, int64(total), took, &waits)
		rates[mode] = float64(total) / took.Seconds()
	}
	if _, ok := rates[backlog]; !ok {
		fmt.Fprintf(cfg.notes(), "  %s: fair drained at %.2f× the ordered queue's rate\n", workload, rates[fair]/rates[ordered])
		return nil
	}
	fmt.Fprintf(cfg.notes(), "  %s: fair drained at %.2f×, backlog at %.2f× the ordered queue's rate (backlog/fair %.2f×)\n",
		workload, rates[fair]/rates[ordered], rates[backlog]/rates[ordered], rates[backlog]/rates[fair])
	return nil
}

func (t *pgTarget) claimModes() []claimMode { return claimModes }

func (t *pgTarget) pushTenant(ctx context.Context, mode claimMode, tenant func(int) string, n int) error {
	switch mode {
	case fair:
		return pushInBatches(ctx, n, 10000, func(i int) jobs.BenchFairPayload { return jobs.BenchFairPayload{Tenant: tenant(i), N: int32(i)} },
			jobs.NewBenchFairQueue(t.pool).PushMany)
	case backlog:
		return pushInBatches(ctx, n, 10000, func(i int) jobs.BenchBacklogPayload { return jobs.BenchBacklogPayload{Tenant: tenant(i), N: int32(i)} },
			jobs.NewBenchBacklogQueue(t.pool).PushMany)
	}
	return pushInBatches(ctx, n, 10000, func(i int) jobs.BenchTenantPayload { return jobs.BenchTenantPayload{Tenant: tenant(i), N: int32(i)} },
		jobs.NewBenchTenantQueue(t.pool).PushMany)
}

func (t *pgTarget) tenantWorker(mode claimMode, started func(tenant string), opts ...queue.WorkerOption) runner {
	switch mode {
	case fair:
		return jobs.NewBenchFairQueue(t.pool).Worker(func(_ context.Context, j *queue.Job[jobs.BenchFairPayload]) error {
			started(j.Payload.Tenant)
			return nil
		}, opts...)
	case backlog:
		return jobs.NewBenchBacklogQueue(t.pool).Worker(func(_ context.Context, j *queue.Job[jobs.BenchBacklogPayload]) error {
			started(j.Payload.Tenant)
			return nil
		}, opts...)
	}
	return jobs.NewBenchTenantQueue(t.pool).Worker(func(_ context.Context, j *queue.Job[jobs.BenchTenantPayload]) error {
		started(j.Payload.Tenant)
		return nil
	}, opts...)
}

// claimModes: MySQL has no backlog.
func (t *myTarget) claimModes() []claimMode { return []claimMode{ordered, fair} }

func (t *myTarget) pushTenant(ctx context.Context, mode claimMode, tenant func(int) string, n int) error {
	switch mode {
	case fair:
		return pushInBatches(ctx, n, 1000, func(i int) myjobs.BenchFairPayload { return myjobs.BenchFairPayload{Tenant: tenant(i), N: int32(i)} },
			myjobs.NewBenchFairQueue(t.db).PushMany)
	case ordered:
		return pushInBatches(ctx, n, 1000, func(i int) myjobs.BenchTenantPayload {
			return myjobs.BenchTenantPayload{Tenant: tenant(i), N: int32(i)}
		},
			myjobs.NewBenchTenantQueue(t.db).PushMany)
	}
	return fmt.Errorf("MySQL has no %s queue", mode)
}

func (t *myTarget) tenantWorker(mode claimMode, started func(tenant string), opts ...queue.WorkerOption) runner {
	if mode == fair {
		return myjobs.NewBenchFairQueue(t.db).Worker(func(_ context.Context, j *queue.Job[myjobs.BenchFairPayload]) error {
			started(j.Payload.Tenant)
			return nil
		}, opts...)
	}
	return myjobs.NewBenchTenantQueue(t.db).Worker(func(_ context.Context, j *queue.Job[myjobs.BenchTenantPayload]) error {
		started(j.Payload.Tenant)
		return nil
	}, opts...)
}
