package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuegen/queuegen/internal/bench/jobs"
	"github.com/queuegen/queuegen/queue"
)

// skewTarget is a target whose engine has fair claims (fair_by):
// PostgreSQL.
type skewTarget interface {
	// pushTenant pushes n jobs of tenant into bench_fair (fair) or
	// bench_tenant, in batches.
	pushTenant(ctx context.Context, fair bool, tenant string, n int) error
	// tenantWorker is a worker of bench_fair (fair) or bench_tenant whose
	// handler calls started with the job's tenant.
	tenantWorker(fair bool, started func(tenant string), opts ...queue.WorkerOption) runner
}

// skewTenants and skewEach are skew's small tenants: 50 of 20 jobs each.
const skewTenants, skewEach = 50, 20

// runSkew measures what a fair claim buys when one tenant's backlog
// arrives first: tenant a pushes Jobs jobs, then 50 other tenants 20 jobs
// each, and one worker drains them all, once from a queue claimed in
// order and once from a fair_by queue. The summary line's p50 and p99 are
// the small tenants' jobs' waits (from the drain's start to their handler
// starting); a second line gives the fair drain's rate as a ratio of the
// ordered one.
func runSkew(ctx context.Context, t target, cfg Config) error {
	st, ok := t.(skewTarget)
	if !ok { // Run refuses it first
		return errors.New("the skew workload " + postgresOnly[Skew])
	}
	rates := map[bool]float64{}
	for _, fair := range []bool{false, true} {
		name := "skew/ordered"
		if fair {
			name = "skew/fair"
		}
		if err := t.setup(ctx); err != nil {
			return err
		}
		if err := st.pushTenant(ctx, fair, "a", cfg.Jobs); err != nil {
			return err
		}
		for i := range skewTenants {
			if err := st.pushTenant(ctx, fair, fmt.Sprintf("b%02d", i), skewEach); err != nil {
				return err
			}
		}
		total := cfg.Jobs + skewTenants*skewEach
		var mu sync.Mutex
		var waits latencies
		var start atomic.Pointer[time.Time]
		started := func(tenant string) {
			if tenant == "a" {
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
			return st.tenantWorker(fair, started, opts...), func() {}, nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if len(waits.d) != skewTenants*skewEach {
			return fmt.Errorf("%s: %d small tenants' jobs ran, want %d", name, len(waits.d), skewTenants*skewEach)
		}
		cfg.summary(name, int64(total), took, &waits)
		rates[fair] = float64(total) / took.Seconds()
	}
	fmt.Fprintf(cfg.notes(), "  skew/fair: drained at %.2f× the ordered queue's rate\n", rates[true]/rates[false])
	return nil
}

func (t *pgTarget) pushTenant(ctx context.Context, fair bool, tenant string, n int) error {
	if fair {
		return pushInBatches(ctx, n, 10000, func(i int) jobs.BenchFairPayload { return jobs.BenchFairPayload{Tenant: tenant, N: int32(i)} },
			jobs.NewBenchFairQueue(t.pool).PushMany)
	}
	return pushInBatches(ctx, n, 10000, func(i int) jobs.BenchTenantPayload { return jobs.BenchTenantPayload{Tenant: tenant, N: int32(i)} },
		jobs.NewBenchTenantQueue(t.pool).PushMany)
}

func (t *pgTarget) tenantWorker(fair bool, started func(tenant string), opts ...queue.WorkerOption) runner {
	if fair {
		return jobs.NewBenchFairQueue(t.pool).Worker(func(_ context.Context, j *queue.Job[jobs.BenchFairPayload]) error {
			started(j.Payload.Tenant)
			return nil
		}, opts...)
	}
	return jobs.NewBenchTenantQueue(t.pool).Worker(func(_ context.Context, j *queue.Job[jobs.BenchTenantPayload]) error {
		started(j.Payload.Tenant)
		return nil
	}, opts...)
}
