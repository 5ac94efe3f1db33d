package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/queue"
)

// Limits are PostgreSQL's: these tests run on PostgreSQL only, against
// queue limited of the e2e spec (fair_by: tenant, limits: {per_key: 2,
// global: 5}, max_attempts: 3) and queue capped (limits: {global: 3}).

// pushLimited pushes n jobs of each tenant.
func pushLimited(t *testing.T, q *jobs.LimitedQueue, n int, tenants ...string) {
	t.Helper()
	var batch []jobs.LimitedPayload
	for _, tenant := range tenants {
		for i := range n {
			batch = append(batch, jobs.LimitedPayload{Tenant: tenant, N: int32(i)})
		}
	}
	if _, err := q.PushMany(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
}

// perTenant counts jobs by tenant.
func perTenant(js []*queue.Job[jobs.LimitedPayload]) map[string]int {
	out := map[string]int{}
	for _, j := range js {
		out[j.Payload.Tenant]++
	}
	return out
}

// running counts limited's leased jobs: the most per tenant, and in all.
func running(t *testing.T, db *pgxpool.Pool) (perKey, global int) {
	t.Helper()
	err := db.QueryRow(context.Background(), `
		SELECT coalesce(max(n), 0), coalesce(sum(n), 0)
		FROM (SELECT count(*) AS n FROM limited_queue WHERE state = 'running' GROUP BY tenant) AS per`).Scan(&perKey, &global)
	if err != nil {
		t.Fatal(err)
	}
	return perKey, global
}

// TestLimitsHoldInTheClaim: a claim takes no more than the limits leave
// room for, however many it asks for, and each way a job gives up its
// slot lets the next claim take one more.
func TestLimitsHoldInTheClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewLimitedQueue(db)
	pushLimited(t, q, 10, "a", "b", "c")
	got, err := q.Claim(ctx, "node", 100)
	if err != nil {
		t.Fatal(err)
	}
	if per := perTenant(got); len(got) != 5 || per["a"] > 2 || per["b"] > 2 || per["c"] > 2 {
		t.Fatalf("first claim took %v (%d jobs); want 5, at most 2 a tenant", per, len(got))
	}
	if more, err := q.Claim(ctx, "node", 100); err != nil || len(more) != 0 {
		t.Fatalf("claim at the global limit = %d jobs, %v; want none", len(more), err)
	}
	// Each way out of running frees one slot.
	frees := []struct {
		name string
		op   func(*queue.Job[jobs.LimitedPayload]) error
	}{
		{"Complete", func(j *queue.Job[jobs.LimitedPayload]) error { return q.Complete(ctx, j) }},
		{"Fail", func(j *queue.Job[jobs.LimitedPayload]) error { _, err := q.Fail(ctx, j, errors.New("x")); return err }},
		{"Snooze", func(j *queue.Job[jobs.LimitedPayload]) error { return q.Snooze(ctx, j, time.Now().Add(time.Hour)) }},
		{"Release", func(j *queue.Job[jobs.LimitedPayload]) error { return q.Release(ctx, j) }},
		{"Discard", func(j *queue.Job[jobs.LimitedPayload]) error { return q.Discard(ctx, j, errors.New("x")) }},
	}
	for i, f := range frees {
		if err := f.op(got[i]); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		next, err := q.Claim(ctx, "node", 100)
		if err != nil || len(next) != 1 {
			t.Fatalf("claim after %s = %d jobs, %v; want 1", f.name, len(next), err)
		}
		got[i] = next[0]
		if perKey, global := running(t, db); perKey > 2 || global != 5 {
			t.Fatalf("after %s: %d running, %d of one tenant", f.name, global, perKey)
		}
	}
	// Releasing the node frees every slot it held.
	if n, err := q.ReleaseNode(ctx, "node"); err != nil || n != 5 {
		t.Fatalf("ReleaseNode = %d, %v", n, err)
	}
	if again, err := q.Claim(ctx, "other", 100); err != nil || len(again) != 5 {
		t.Fatalf("claim after ReleaseNode = %d jobs, %v; want 5", len(again), err)
	}
}

// TestLimitsPerKeyLeavesRoomToOthers: a tenant at its limit takes nothing
// more, and the global room goes to the tenants that have slots free.
func TestLimitsPerKeyLeavesRoomToOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := jobs.NewLimitedQueue(migrated(t))
	pushLimited(t, q, 10, "a")
	got, err := q.Claim(ctx, "node", 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("claim of a's backlog = %d jobs, %v; want a's 2", len(got), err)
	}
	pushLimited(t, q, 10, "b", "c")
	got, err = q.Claim(ctx, "node", 10)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(perTenant(got)) != "map[b:2 c:1]" && fmt.Sprint(perTenant(got)) != "map[b:1 c:2]" {
		t.Fatalf("second claim took %v; want the 3 global slots left, to b and c", perTenant(got))
	}
}

// TestLimitsExpiredLeaseKeepsItsSlot: a job whose lease expired keeps its
// slot and is the one a claim takes again; on its last attempt the slot
// frees at once (Reap makes the job dead later).
func TestLimitsExpiredLeaseKeepsItsSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := jobs.NewLimitedQueue(migrated(t))
	pushLimited(t, q, 10, "a")
	t0 := time.Now()
	old, err := q.Claim(ctx, "dead", 10, queue.ClaimAt(t0))
	if err != nil || len(old) != 2 {
		t.Fatalf("first claim = %d jobs, %v", len(old), err)
	}
	for attempt := int32(2); attempt <= 3; attempt++ {
		t0 = t0.Add(3 * time.Second) // past the 2s lease
		again, err := q.Claim(ctx, "live", 10, queue.ClaimAt(t0))
		if err != nil || len(again) != 2 {
			t.Fatalf("claim after expiry = %d jobs, %v; want the 2 expired", len(again), err)
		}
		for _, j := range again {
			if j.Attempt != attempt {
				t.Fatalf("claim after expiry took job %d at attempt %d; want an expired job at attempt %d", j.ID, j.Attempt, attempt)
			}
		}
	}
	// Both are on their last attempt: once those leases expire, their
	// slots go to a's next jobs.
	t0 = t0.Add(3 * time.Second)
	fresh, err := q.Claim(ctx, "live", 10, queue.ClaimAt(t0))
	if err != nil || len(fresh) != 2 || fresh[0].Attempt != 1 || fresh[1].Attempt != 1 {
		t.Fatalf("claim after the last attempt expired = %v, %v; want 2 new jobs", fresh, err)
	}
}

// TestLimitsGlobalOnly: a queue with a global limit and no fair_by takes
// its jobs in order, up to the limit.
func TestLimitsGlobalOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := jobs.NewCappedQueue(migrated(t))
	if _, err := q.PushMany(ctx, []jobs.CappedPayload{{N: 1}, {N: 2}, {N: 3}, {N: 4}, {N: 5}}); err != nil {
		t.Fatal(err)
	}
	got, err := q.Claim(ctx, "node", 10)
	if err != nil || len(got) != 3 || got[0].Payload.N != 1 || got[2].Payload.N != 3 {
		t.Fatalf("claim = %v, %v; want jobs 1-3", got, err)
	}
	if err := q.Complete(ctx, got[0]); err != nil {
		t.Fatal(err)
	}
	got, err = q.Claim(ctx, "node", 10)
	if err != nil || len(got) != 1 || got[0].Payload.N != 4 {
		t.Fatalf("claim after one completed = %v, %v; want job 4", got, err)
	}
	if q.Limits() != (queue.Limits{Global: 3}) {
		t.Errorf("Limits() = %+v", q.Limits())
	}
}

// TestLimitsClaimInCallersTransaction: a copy made by WithTx claims in the
// caller's transaction and holds the claim lock until it ends, so a claim
// outside waits and then counts what the transaction took.
func TestLimitsClaimInCallersTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewCappedQueue(db)
	if _, err := q.PushMany(ctx, []jobs.CappedPayload{{N: 1}, {N: 2}, {N: 3}, {N: 4}}); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	inTx, err := q.WithTx(tx).Claim(ctx, "node", 2)
	if err != nil || len(inTx) != 2 {
		t.Fatalf("claim in tx = %d jobs, %v", len(inTx), err)
	}
	outside := make(chan int, 1)
	go func() {
		got, err := q.Claim(ctx, "other", 10)
		if err != nil {
			t.Error(err)
		}
		outside <- len(got)
	}()
	select {
	case n := <-outside:
		t.Fatalf("a claim outside the transaction took %d jobs while it held the claim lock", n)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := <-outside; n != 1 {
		t.Fatalf("claim after the transaction committed took %d jobs; want the 1 slot left", n)
	}
}

// TestLimitsHoldUnderConcurrentClaims: many claimers on their own
// connections, completing what they take, never lease more than the
// limits, sampled after every claim, and work every job once.
func TestLimitsHoldUnderConcurrentClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewLimitedQueue(db)
	tenants := []string{"a", "b", "c", "d", "e", "f"}
	pushLimited(t, q, 40, tenants...)
	total := 40 * len(tenants)
	var done atomic.Int64
	var mu sync.Mutex
	maxPerKey, maxGlobal := 0, 0
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := fmt.Sprintf("node-%d", c)
			for done.Load() < int64(total) {
				got, err := q.Claim(ctx, node, 3)
				if err != nil {
					t.Error(err)
					return
				}
				perKey, global := running(t, db)
				mu.Lock()
				maxPerKey, maxGlobal = max(maxPerKey, perKey), max(maxGlobal, global)
				mu.Unlock()
				if len(got) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				time.Sleep(2 * time.Millisecond)
				n, err := q.CompleteMany(ctx, got)
				if err != nil || n != int64(len(got)) {
					t.Errorf("CompleteMany = %d, %v", n, err)
					return
				}
				done.Add(n)
			}
		}()
	}
	wg.Wait()
	if maxPerKey > 2 || maxGlobal > 5 {
		t.Errorf("sampled %d running jobs of one tenant and %d in all; limits are 2 and 5", maxPerKey, maxGlobal)
	}
	if maxGlobal < 5 {
		t.Errorf("never more than %d running at once: the claims left global slots unused", maxGlobal)
	}
	if n := pgCount(t, db, `SELECT count(*) FROM limited_queue`); n != 0 || done.Load() != int64(total) {
		t.Errorf("%d jobs left, %d completed of %d", n, done.Load(), total)
	}
}

// TestLimitsHoldAcrossWorkers: two Workers (two nodes) with room for many
// more jobs than the limits run no more than the limits at once, and
// keep the slots busy while jobs wait.
func TestLimitsHoldAcrossWorkers(t *testing.T) {
	t.Parallel()
	db := migrated(t)
	q := jobs.NewLimitedQueue(db)
	pushLimited(t, q, 15, "a", "b", "c", "d")
	var mu sync.Mutex
	now, peak := map[string]int{}, map[string]int{}
	all, peakAll := 0, 0
	var done sync.WaitGroup
	done.Add(60)
	handler := func(ctx context.Context, j *queue.Job[jobs.LimitedPayload]) error {
		mu.Lock()
		now[j.Payload.Tenant]++
		all++
		peak[j.Payload.Tenant] = max(peak[j.Payload.Tenant], now[j.Payload.Tenant])
		peakAll = max(peakAll, all)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		now[j.Payload.Tenant]--
		all--
		mu.Unlock()
		done.Done()
		return nil
	}
	for _, node := range []string{"one", "two"} {
		stop := runWorker(t, q.Worker(handler, queue.Node(node), queue.Concurrency(20)))
		defer stop() //nolint:errcheck
	}
	finished := make(chan struct{})
	go func() { done.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("60 jobs of 20ms were not all worked within 30s")
	}
	mu.Lock()
	defer mu.Unlock()
	for tenant, n := range peak {
		if n > 2 {
			t.Errorf("tenant %s ran %d jobs at once; the limit is 2", tenant, n)
		}
	}
	if peakAll > 5 {
		t.Errorf("%d jobs ran at once; the global limit is 5", peakAll)
	}
}

// Rates are PostgreSQL's too: queue throttled (fair_by: tenant, rate: 3
// per 1s per tenant) and queue paced (rate: 4 per 500ms, limits: {global:
// 3}).

// TestRatePerKeyInTheClaim: each tenant gets its rate's worth of jobs in
// a window, and more once the window has moved past them.
func TestRatePerKeyInTheClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewThrottledQueue(db)
	var ps []jobs.ThrottledPayload
	for i := range 10 {
		ps = append(ps, jobs.ThrottledPayload{Tenant: "a", N: int32(i)}, jobs.ThrottledPayload{Tenant: "b", N: int32(i)})
	}
	if _, err := q.PushMany(ctx, ps); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	claim := func(at time.Duration) map[string]int {
		t.Helper()
		got, err := q.Claim(ctx, "node", 100, queue.ClaimAt(t0.Add(at)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.CompleteMany(ctx, got); err != nil {
			t.Fatal(err)
		}
		per := map[string]int{}
		for _, j := range got {
			per[j.Payload.Tenant]++
		}
		return per
	}
	for _, c := range []struct {
		at   time.Duration
		want string
	}{
		{0, "map[a:3 b:3]"},
		{500 * time.Millisecond, "map[]"},         // the window holds 3 of each
		{1001 * time.Millisecond, "map[a:3 b:3]"}, // the first claims have left it
		{1500 * time.Millisecond, "map[]"},
	} {
		if got := fmt.Sprint(claim(c.at)); got != c.want {
			t.Errorf("claim at +%s took %s, want %s", c.at, got, c.want)
		}
	}
	// The log keeps one window: the first claim's rows went with the third.
	if n := pgCount(t, db, "SELECT count(*) FROM throttled_queue_rate"); n != 2 {
		t.Errorf("rate log holds %d rows, want the last claim's 2", n)
	}
	if q.Limits() != (queue.Limits{Rate: 3, Per: time.Second, RateByKey: true}) {
		t.Errorf("Limits() = %+v", q.Limits())
	}
}

// TestRateAndGlobalLimitTogether: a queue with a rate and a global limit
// takes what the tighter of the two leaves.
func TestRateAndGlobalLimitTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := jobs.NewPacedQueue(migrated(t))
	var ps []jobs.PacedPayload
	for i := range 20 {
		ps = append(ps, jobs.PacedPayload{N: int32(i)})
	}
	if _, err := q.PushMany(ctx, ps); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for _, c := range []struct {
		at   time.Duration
		want int
		why  string
	}{
		{0, 3, "the global limit"},
		{100 * time.Millisecond, 1, "the rate: 4 per 500ms, 3 taken"},
		{200 * time.Millisecond, 0, "the rate"},
		{501 * time.Millisecond, 3, "the rate, 1 taken in the window"},
	} {
		got, err := q.Claim(ctx, "node", 100, queue.ClaimAt(t0.Add(c.at)))
		if err != nil || len(got) != c.want {
			t.Fatalf("claim at +%s = %d jobs, %v; want %d (%s)", c.at, len(got), err, c.want, c.why)
		}
		if _, err := q.CompleteMany(ctx, got); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRateHoldsUnderConcurrentClaims: 8 claimers on their own connections
// claim a tenant's jobs as fast as they can for 2.5 s; by the jobs'
// attempted_at (the claims' times), no one-second window holds more than 3
// of a tenant's jobs, and each window's worth was taken.
func TestRateHoldsUnderConcurrentClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewThrottledQueue(db)
	var ps []jobs.ThrottledPayload
	for i := range 40 {
		ps = append(ps, jobs.ThrottledPayload{Tenant: "a", N: int32(i)}, jobs.ThrottledPayload{Tenant: "b", N: int32(i)})
	}
	if _, err := q.PushMany(ctx, ps); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(2500 * time.Millisecond)
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for time.Now().Before(end) {
				if _, err := q.Claim(ctx, fmt.Sprint("node-", c), 2); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	// The most jobs of one tenant whose claims lie within one second.
	most := pgCount(t, db, `SELECT coalesce(max(n), 0) FROM (
		SELECT (SELECT count(*) FROM throttled_queue o
		        WHERE o.tenant = j.tenant AND o.attempted_at > j.attempted_at - interval '1 second' AND o.attempted_at <= j.attempted_at) AS n
		FROM throttled_queue j WHERE j.attempted_at IS NOT NULL) AS w`)
	claimed := pgCount(t, db, `SELECT count(*) FROM throttled_queue WHERE attempted_at IS NOT NULL`)
	if most > 3 {
		t.Errorf("%d jobs of one tenant claimed within one second; the rate is 3", most)
	}
	// 2.5 s: three windows' worth, 9 a tenant.
	if claimed != 18 {
		t.Errorf("%d jobs claimed in 2.5 s, want 18 (3 windows of 3, 2 tenants)", claimed)
	}
}
