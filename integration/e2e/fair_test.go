package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/integration/e2e/mysql/myjobs"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/queue"
	"github.com/queuegen/queuegen/queue/queueimpl/mysqlimpl"
	"github.com/queuegen/queuegen/queue/queueimpl/pgximpl"
)

// The fairness suite runs on every engine with fair claims (PostgreSQL and
// MySQL; SQL Server refuses fair_by), against queues fair (fair_by:
// tenant, priority) and txfair (the same in transaction mode) of each
// engine's e2e spec, through fairQueue, which hides their payloads' Go
// types.

// fairJob is a job a fair claim took.
type fairJob struct {
	id     int64
	tenant string
	n      int32
}

// String is tenant/n.
func (j fairJob) String() string { return fmt.Sprintf("%s/%d", j.tenant, j.n) }

// fairQueue is one engine's queues fair and txfair.
type fairQueue struct {
	// push pushes tenant's job n to fair; pushMany pushes its jobs 0 to
	// n-1, in that order, in one batch.
	push     func(ctx context.Context, tenant string, n int32, opts ...queue.PushOption) error
	pushMany func(ctx context.Context, tenant string, n int) error
	// claim claims up to max jobs of fair for node.
	claim func(ctx context.Context, node string, max int) ([]fairJob, error)
	// txPush pushes tenant's job n to txfair; txClaim claims up to max
	// of its jobs in a transaction of its own, left open (holding its
	// jobs) until the test ends.
	txPush  func(ctx context.Context, tenant string, n int32) error
	txClaim func(t *testing.T, max int) ([]fairJob, error)
}

// fairAccessor is what fairQueue uses of a generated lease-mode accessor
// whose payload is P.
type fairAccessor[P any] interface {
	Push(ctx context.Context, p P, opts ...queue.PushOption) (queue.PushResult, error)
	PushMany(ctx context.Context, ps []P, opts ...queue.PushOption) (int64, error)
	Claim(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]*queue.Job[P], error)
}

// txFairAccessor is what fairQueue uses of a generated transaction-mode
// accessor whose payload is P and whose transactions are Tx.
type txFairAccessor[P, Tx any] interface {
	Push(ctx context.Context, p P, opts ...queue.PushOption) (queue.PushResult, error)
	Claim(ctx context.Context, tx Tx, max int, opts ...queue.ClaimOption) ([]*queue.Job[P], error)
}

// fairOf is fairQueue over the accessors of fair (lq) and txfair (tq),
// whose payloads build and key (txBuild and txKey) build and read, and whose transactions
// driver begins.
func fairOf[P, T, Tx any](lq fairAccessor[P], build func(tenant string, n int32) P, key func(P) (string, int32),
	tq txFairAccessor[T, Tx], txBuild func(tenant string, n int32) T, txKey func(T) (string, int32), driver queue.TxDriver[Tx]) *fairQueue {
	return &fairQueue{
		push: func(ctx context.Context, tenant string, n int32, opts ...queue.PushOption) error {
			_, err := lq.Push(ctx, build(tenant, n), opts...)
			return err
		},
		pushMany: func(ctx context.Context, tenant string, n int) error {
			ps := make([]P, n)
			for i := range ps {
				ps[i] = build(tenant, int32(i))
			}
			_, err := lq.PushMany(ctx, ps)
			return err
		},
		claim: func(ctx context.Context, node string, max int) ([]fairJob, error) {
			got, err := lq.Claim(ctx, node, max)
			return fairJobs(got, key), err
		},
		txPush: func(ctx context.Context, tenant string, n int32) error {
			_, err := tq.Push(ctx, txBuild(tenant, n))
			return err
		},
		txClaim: func(t *testing.T, max int) ([]fairJob, error) {
			ctx := context.Background()
			tx, err := driver.Begin(ctx, queue.DefaultIsolation)
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { driver.Rollback(context.Background(), tx) })
			got, err := tq.Claim(ctx, tx, max)
			return fairJobs(got, txKey), err
		},
	}
}

// fairJobs are jobs as fairJob, key reading their tenant and n.
func fairJobs[P any](js []*queue.Job[P], key func(P) (string, int32)) []fairJob {
	out := make([]fairJob, len(js))
	for i, j := range js {
		tenant, n := key(j.Payload)
		out[i] = fairJob{id: j.ID, tenant: tenant, n: n}
	}
	return out
}

// fairQueueOf is fairQueue on engine e's database, or nil where the engine
// has no fair claims.
func fairQueueOf(t *testing.T, e *engine) *fairQueue {
	t.Helper()
	switch e.name {
	case dburl.PostgreSQL:
		pool := poolFor(t, e.db.Address)
		return fairOf(jobs.NewFairQueue(pool),
			func(tenant string, n int32) jobs.FairPayload { return jobs.FairPayload{Tenant: tenant, N: n} },
			func(p jobs.FairPayload) (string, int32) { return p.Tenant, p.N },
			jobs.NewTxfairQueue(pool),
			func(tenant string, n int32) jobs.TxfairPayload { return jobs.TxfairPayload{Tenant: tenant, N: n} },
			func(p jobs.TxfairPayload) (string, int32) { return p.Tenant, p.N },
			pgximpl.TxDriver(pool))
	case dburl.MySQL:
		return fairOf(myjobs.NewFairQueue(e.db.SQL),
			func(tenant string, n int32) myjobs.FairPayload { return myjobs.FairPayload{Tenant: tenant, N: n} },
			func(p myjobs.FairPayload) (string, int32) { return p.Tenant, p.N },
			myjobs.NewTxfairQueue(e.db.SQL),
			func(tenant string, n int32) myjobs.TxfairPayload { return myjobs.TxfairPayload{Tenant: tenant, N: n} },
			func(p myjobs.TxfairPayload) (string, int32) { return p.Tenant, p.N },
			mysqlimpl.TxDriver(e.db.SQL))
	}
	return nil
}

// eachFairEngine runs test once per engine with fair claims, in parallel
// subtests named after the engines, each with a fresh migrated database.
func eachFairEngine(t *testing.T, test func(t *testing.T, q *fairQueue)) {
	t.Helper()
	t.Parallel()
	for _, name := range dbtest.ThisRun() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			q := fairQueueOf(t, open(t, name))
			if q == nil {
				t.Fatalf("%s has no fair queue in the e2e suite", name)
			}
			test(t, q)
		})
	}
}

// pushTenant pushes tenant's jobs 0 to n-1 to q's queue fair.
func pushTenant(t *testing.T, q *fairQueue, tenant string, n int) {
	t.Helper()
	if err := q.pushMany(context.Background(), tenant, n); err != nil {
		t.Fatal(err)
	}
}

// pushNumbered pushes n jobs with push (a PushMany), job i's payload
// payload(i).
func pushNumbered[P any](t *testing.T, push func(context.Context, []P, ...queue.PushOption) (int64, error), n int, payload func(i int32) P) {
	t.Helper()
	batch := make([]P, n)
	for i := range batch {
		batch[i] = payload(int32(i))
	}
	if _, err := push(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
}

// TestFairClaimTakesEachKeyInTurn: with tenant a's backlog pushed first,
// a claim takes an equal share from every tenant with due jobs, each
// tenant's oldest first, instead of a's backlog in order; once the small
// tenants are done, a's jobs fill whole batches again, in order. (A
// claim's rows come in no particular order: the test sorts them.)
func TestFairClaimTakesEachKeyInTurn(t *testing.T) {
	eachFairEngine(t, func(t *testing.T, q *fairQueue) {
		ctx := context.Background()
		pushTenant(t, q, "a", 50)
		pushTenant(t, q, "b", 2)
		pushTenant(t, q, "c", 2)
		got, err := q.claim(ctx, "node", 6)
		if err != nil {
			t.Fatal(err)
		}
		per := map[string][]int32{}
		for _, j := range got {
			per[j.tenant] = append(per[j.tenant], j.n)
		}
		for _, ns := range per {
			slices.Sort(ns)
		}
		if fmt.Sprint(per) != "map[a:[0 1] b:[0 1] c:[0 1]]" {
			t.Errorf("first claim of 6 took %v; want each tenant's two oldest", per)
		}
		got, err = q.claim(ctx, "node", 10)
		if err != nil || len(got) != 10 {
			t.Fatalf("second claim = %d, %v", len(got), err)
		}
		slices.SortFunc(got, func(x, y fairJob) int { return int(x.n - y.n) })
		for i, j := range got {
			if j.tenant != "a" || j.n != int32(i+2) {
				t.Errorf("second claim's job %d = %s, want a/%d", i, j, i+2)
			}
		}
	})
}

// TestFairClaimsOfOneServeEveryKey: values tie in a turn, and the tie is
// not given to the oldest job (MySQL draws it at random; PostgreSQL's
// claims rotate, see TestFairClaimsRotate), so that a worker claiming one
// freed slot at a time does not serve tenants in the order of their
// oldest jobs: with all of a's jobs older than b's, 40 claims of one take
// b's about half the time (fewer than 5 has odds under 1 in 10^6 where
// the draw is random), where they took a's every time.
func TestFairClaimsOfOneServeEveryKey(t *testing.T) {
	eachFairEngine(t, func(t *testing.T, q *fairQueue) {
		ctx := context.Background()
		pushTenant(t, q, "a", 40)
		pushTenant(t, q, "b", 40)
		per := map[string]int{}
		for i := range 40 {
			got, err := q.claim(ctx, "node", 1)
			if err != nil || len(got) != 1 {
				t.Fatalf("claim %d = %v, %v", i, got, err)
			}
			per[got[0].tenant]++
		}
		if per["b"] < 5 || per["a"] < 5 {
			t.Errorf("40 claims of one took %v; want both tenants served", per)
		}
	})
}

// TestFairClaimsRotate (PostgreSQL, whose fair claim rotates): each claim
// starts after the tenant at which the accessor's previous claim stopped,
// so claims of one take the tenants in turn, a b c a b c, whatever their
// jobs' ages, and a claim of more than one turn gives its extra jobs to
// the tenants after those of the claim before. Queues fair (priority:
// each tenant's turn reads its jobs from the start of its index range)
// and fairfifo (claim order: from the first job the walk found). An
// accessor that forgot where its last claim stopped, a walk that did not
// wrap around to the first tenant, or a claim that returned its jobs in
// another order than it took them would fail it.
func TestFairClaimsRotate(t *testing.T) {
	t.Parallel()
	pool := migrated(t)
	for _, c := range []struct {
		name  string
		claim func(ctx context.Context, max int) ([]string, error)
		push  func(ctx context.Context, tenant string, n int) error
	}{
		{"fair", rotationOf(jobs.NewFairQueue(pool), func(p jobs.FairPayload) string { return p.Tenant }),
			func(ctx context.Context, tenant string, n int) error {
				_, err := jobs.NewFairQueue(pool).PushMany(ctx, slices.Repeat([]jobs.FairPayload{{Tenant: tenant}}, n))
				return err
			}},
		{"fairfifo", rotationOf(jobs.NewFairfifoQueue(pool), func(p jobs.FairfifoPayload) string { return p.Tenant }),
			func(ctx context.Context, tenant string, n int) error {
				_, err := jobs.NewFairfifoQueue(pool).PushMany(ctx, slices.Repeat([]jobs.FairfifoPayload{{Tenant: tenant}}, n))
				return err
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			// c's jobs are older than b's, and b's than a's: claims in age
			// order would take c's first.
			for _, tenant := range []string{"c", "b", "a"} {
				if err := c.push(ctx, tenant, 10); err != nil {
					t.Fatal(err)
				}
			}
			var ones []string
			for range 7 {
				got, err := c.claim(ctx, 1)
				if err != nil {
					t.Fatal(err)
				}
				ones = append(ones, got...)
			}
			if want := "a b c a b c a"; strings.Join(ones, " ") != want {
				t.Errorf("claims of one took %s, want %s", strings.Join(ones, " "), want)
			}
			// The last claim stopped at a: claims of four take a turn of
			// b c a, then the extra job of b, then of c, then of a.
			var fours []string
			for range 3 {
				got, err := c.claim(ctx, 4)
				if err != nil {
					t.Fatal(err)
				}
				fours = append(fours, strings.Join(got, ""))
			}
			if want := "bcab cabc abca"; strings.Join(fours, " ") != want {
				t.Errorf("claims of four took %s, want %s", strings.Join(fours, " "), want)
			}
		})
	}
}

// TestFairClaimsOfManyValuesTakeAQuantumOfEach: on PostgreSQL a rotating
// claim of many jobs takes from at most 32 values, up to a quantum of each
// (the batch over 32, rounded up), instead of one job of as many values as
// it has jobs, which costs a probe of the fair index a job; the values it
// took fewer from come first in the next claim. Fails if the walk goes on
// past the values the batch needs, or the cursor skips the value it cut
// short.
func TestFairClaimsOfManyValuesTakeAQuantumOfEach(t *testing.T) {
	t.Parallel()
	pool := migrated(t)
	ctx := context.Background()
	q := jobs.NewFairfifoQueue(pool)
	for i := range 100 {
		if _, err := q.PushMany(ctx, slices.Repeat([]jobs.FairfifoPayload{{Tenant: fmt.Sprintf("t%03d", i)}}, 20)); err != nil {
			t.Fatal(err)
		}
	}
	claim := rotationOf(q, func(p jobs.FairfifoPayload) string { return p.Tenant })
	got, err := claim(ctx, 500)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, tenant := range got {
		count[tenant]++
	}
	// A quantum of 16: t000 to t030 give 16 each (496), t031 the last 4.
	want := map[string]int{"t031": 4}
	for i := range 31 {
		want[fmt.Sprintf("t%03d", i)] = 16
	}
	if diff := cmp.Diff(want, count); diff != "" {
		t.Errorf("a claim of 500 from 100 tenants of 20 jobs took (-want +got):\n%s", diff)
	}
	// Its last job is t030's sixteenth: the next claim starts at t031.
	got, err = claim(ctx, 500)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 500 || got[0] != "t031" {
		t.Errorf("the next claim took %d jobs, the first of %q; want 500, the first of t031", len(got), got[:min(len(got), 1)])
	}
}

// rotationOf claims from a fair accessor, as the tenants of the jobs it
// returns, in the order it returns them.
func rotationOf[P any](q fairAccessor[P], tenant func(P) string) func(ctx context.Context, max int) ([]string, error) {
	return func(ctx context.Context, max int) ([]string, error) {
		got, err := q.Claim(ctx, "node", max)
		out := make([]string, len(got))
		for i, j := range got {
			out[i] = tenant(j.Payload)
		}
		return out, err
	}
}

// TestFairClaimTakesEachKeysHighestPriorityFirst: with priority (queue
// fair has priority: true), each tenant's turn takes its highest-priority
// job first.
func TestFairClaimTakesEachKeysHighestPriorityFirst(t *testing.T) {
	eachFairEngine(t, func(t *testing.T, q *fairQueue) {
		ctx := context.Background()
		pushTenant(t, q, "a", 10)
		if err := q.push(ctx, "a", 99, queue.Priority(5)); err != nil {
			t.Fatal(err)
		}
		pushTenant(t, q, "b", 2)
		if err := q.push(ctx, "c", 7, queue.Priority(9)); err != nil {
			t.Fatal(err)
		}
		got, err := q.claim(ctx, "node", 3)
		if err != nil {
			t.Fatal(err)
		}
		var took []string
		for _, j := range got {
			took = append(took, fmt.Sprintf("%s%d", j.tenant, j.n))
		}
		slices.Sort(took)
		// One turn: each tenant's highest-priority job (a's 99 before its
		// older 0), the claim's rows in no particular order.
		if fmt.Sprint(took) != "[a99 b0 c7]" {
			t.Errorf("claim of 3 took %v; want [a99 b0 c7]", took)
		}
		// The next claim: a's and b's shares of 4, two each, a's by
		// priority, then in order; b has one left, and a claim takes no
		// more than a value's share, as its turn is over.
		got, err = q.claim(ctx, "node", 4)
		if err != nil {
			t.Fatal(err)
		}
		took = took[:0]
		for _, j := range got {
			took = append(took, fmt.Sprintf("%s%d", j.tenant, j.n))
		}
		slices.Sort(took)
		if fmt.Sprint(took) != "[a0 a1 b1]" {
			t.Errorf("second claim of 4 took %v; want [a0 a1 b1]", took)
		}
	})
}

// TestFairClaimsPassOverValuesWithNothingDue: values whose jobs are all
// scheduled later take no share of a claim: with b's jobs due and one job
// each of a and c an hour away, a claim of 20 (one statement on MySQL)
// and a claim of 120 (a seek of each value's share on MySQL) take b's
// only, as many as asked. (A claim that shared the batch among the values
// with available jobs, due or not, came back with a third.)
func TestFairClaimsPassOverValuesWithNothingDue(t *testing.T) {
	eachFairEngine(t, func(t *testing.T, q *fairQueue) {
		ctx := context.Background()
		pushTenant(t, q, "b", 300)
		for _, tenant := range []string{"a", "c"} {
			if err := q.push(ctx, tenant, 0, queue.Delay(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range []int{20, 120} {
			got, err := q.claim(ctx, "node", n)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Errorf("claim of %d took %d jobs", n, len(got))
			}
			for _, j := range got {
				if j.tenant != "b" {
					t.Errorf("claim of %d took %s, which is not due", n, j)
				}
			}
		}
	})
}

// TestFairClaimsConcurrently: four claimers draining many tenants at once
// take every job exactly once.
func TestFairClaimsConcurrently(t *testing.T) {
	eachFairEngine(t, func(t *testing.T, q *fairQueue) {
		ctx := context.Background()
		const tenants, each = 20, 30
		for i := range tenants {
			pushTenant(t, q, fmt.Sprint("t", i), each)
		}
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		for c := range 4 {
			wg.Go(func() {
				for {
					got, err := q.claim(ctx, fmt.Sprint("node-", c), 7)
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, j := range got {
						seen[j.id]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != tenants*each {
			t.Errorf("claimed %d distinct jobs, want %d", len(seen), tenants*each)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("job %d claimed %d times", id, n)
			}
		}
	})
}

// TestFairClaimsOfFewValuesTakeWholeShares: a few values, each with a
// large share of the claim (on MySQL the claim then seeks each value's
// share, a statement a value, where the one statement's walk read s²/2
// entries for a share of s and, on MariaDB, stopped at
// max_recursive_iterations, 1,000 turns: a claim of 3,000 from two values
// came back with 2,002). Each value gives its share, oldest first, at most
// ⌈batch ÷ values⌉; a value with fewer leaves the claim short; and
// transaction-mode claims that hold their jobs take disjoint ones.
func TestFairClaimsOfFewValuesTakeWholeShares(t *testing.T) {
	eachFairEngine(t, func(t *testing.T, q *fairQueue) {
		ctx := context.Background()
		pushTenant(t, q, "a", 1600)
		pushTenant(t, q, "b", 1600)
		pushTenant(t, q, "c", 10)
		got, err := q.claim(ctx, "node", 120)
		if err != nil {
			t.Fatal(err)
		}
		per := map[string][]int32{}
		for _, j := range got {
			per[j.tenant] = append(per[j.tenant], j.n)
		}
		for tenant, want := range map[string]int{"a": 40, "b": 40, "c": 10} {
			ns := per[tenant]
			slices.Sort(ns)
			if len(ns) != want || ns[0] != 0 || ns[len(ns)-1] != int32(want-1) {
				t.Errorf("claim of 120 from three tenants took %v of %s; want its %d oldest", ns, tenant, want)
			}
		}
		// Two values left (c is done), each with 1,560: a claim of 3,000
		// takes 1,500 of each.
		got, err = q.claim(ctx, "node", 3000)
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, j := range got {
			count[j.tenant]++
		}
		if count["a"] != 1500 || count["b"] != 1500 {
			t.Errorf("claim of 3,000 from two tenants took %v; want 1,500 of each", count)
		}
		// Transaction mode: two tenants of 64 jobs; a claim of 64 takes 32
		// of each and holds them; a second claim takes none of those (it
		// may come back short: PostgreSQL's ranks only each value's first
		// share, which the first holds), and no more than 32 of each.
		for i := range 64 {
			for _, tenant := range []string{"x", "y"} {
				if err := q.txPush(ctx, tenant, int32(i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		seen := map[int64]bool{}
		for i := range 2 {
			got, err := q.txClaim(t, 64)
			if err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			for _, j := range got {
				if seen[j.id] {
					t.Errorf("transaction claim %d took job %s, which another open transaction holds", i, j)
				}
				seen[j.id] = true
				count[j.tenant]++
			}
			if i == 0 && (count["x"] != 32 || count["y"] != 32) || count["x"] > 32 || count["y"] > 32 {
				t.Errorf("transaction claim %d of 64 took %v; want 32 of each tenant (at most, beside another claim's)", i, count)
			}
		}
	})
}

// TestFairClaimsServeSmallTenantsBehindABurst: one tenant's burst of 2,000
// jobs, pushed first, does not hold back 20 small tenants' jobs: each
// small tenant's job is among the first three claims of 10 (a claim takes
// one job a tenant while 10 or more have due jobs, so two claims serve at
// least 18 small tenants, and the third the rest), where a claim in order
// would take them after the burst's 2,000; and the burst's jobs are not
// starved either.
func TestFairClaimsServeSmallTenantsBehindABurst(t *testing.T) {
	eachFairEngine(t, func(t *testing.T, q *fairQueue) {
		ctx := context.Background()
		pushTenant(t, q, "burst", 2000)
		for i := range 20 {
			if err := q.push(ctx, fmt.Sprintf("small%02d", i), 0); err != nil {
				t.Fatal(err)
			}
		}
		small, burst := map[string]bool{}, 0
		for i := range 3 {
			got, err := q.claim(ctx, "node", 10)
			if err != nil || len(got) == 0 {
				t.Fatalf("claim %d = %v, %v; want jobs", i, got, err)
			}
			for _, j := range got {
				if j.tenant == "burst" {
					burst++
				} else {
					small[j.tenant] = true
				}
			}
		}
		if len(small) != 20 || burst == 0 {
			t.Errorf("the first three claims of 10 served %d small tenants (%v) and %d of the burst's jobs; want all 20, and the burst too", len(small), small, burst)
		}
	})
}

// TestFairAndLimitedClaimsUseIndexes: the claims of queues fair, limited
// and capped, each over 50,000 queued jobs of 100 tenants with 20 leased,
// read indexes (the fair or claim index, and the lease index), never a
// whole table, with statistics and, for the limited claims, without (a
// table never analyzed: a count of the leased jobs written as
// "locked_until IS NOT NULL" then scanned the table on every claim).
func TestFairAndLimitedClaimsUseIndexes(t *testing.T) {
	t.Parallel()
	db := migrated(t)
	// Each claim's parameters in sqlc's order (that of its Claim…Params).
	limited := []any{nil, 500, []string(nil), "node", 30 * time.Second}
	for _, c := range []struct {
		name, table, goFile, query, fill, index string
		args                                    []any
		// noStats leaves the table unanalyzed (as autovacuum = off does):
		// the planner has no statistics to steer it off the table. These
		// cases come first, before their table has ever been analyzed.
		noStats bool
	}{
		{"limited_queue_no_statistics", "limited_queue", "jobs/jobsdb/limited.sql.go", "claimLimited", "tenant, n", "limited_queue_fair_idx", limited, true},
		{"capped_queue_no_statistics", "capped_queue", "jobs/jobsdb/capped.sql.go", "claimCapped", "n", "capped_queue_claim_idx", []any{nil, "node", 30 * time.Second, 500}, true},
		// The fair claim rotates: before its first claim (after is
		// empty) and from a value on, wrapping around.
		{"fair_queue", "fair_queue", "jobs/jobsdb/fair.sql.go", "claimFair", "tenant, n", "fair_queue_fair_idx", []any{nil, 500, []string(nil), "node", 30 * time.Second}, false},
		{"fair_queue_after", "fair_queue", "jobs/jobsdb/fair.sql.go", "claimFair", "tenant, n", "fair_queue_fair_idx", []any{nil, 500, []string{"t50"}, "node", 30 * time.Second}, false},
		{"limited_queue", "limited_queue", "jobs/jobsdb/limited.sql.go", "claimLimited", "tenant, n", "limited_queue_fair_idx", limited, false},
		{"limited_queue_after", "limited_queue", "jobs/jobsdb/limited.sql.go", "claimLimited", "tenant, n", "limited_queue_fair_idx", []any{nil, 500, []string{"t50"}, "node", 30 * time.Second}, false},
		{"capped_queue", "capped_queue", "jobs/jobsdb/capped.sql.go", "claimCapped", "n", "capped_queue_claim_idx", []any{nil, "node", 30 * time.Second, 500}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			values := "'t' || (g % 100), g"
			if c.fill == "n" {
				values = "g"
			}
			if _, err := db.Exec(ctx, `TRUNCATE `+c.table); err != nil {
				t.Fatal(err)
			}
			// Without statistics the planner sizes the table from its
			// pages: 10,000 jobs is where it read a partial index whole
			// for the limited claim's picks.
			jobs := "50000"
			if c.noStats {
				jobs = "10000"
			}
			for _, sql := range []string{
				`INSERT INTO ` + c.table + ` (` + c.fill + `, max_attempts) SELECT ` + values + `, 3 FROM generate_series(1, ` + jobs + `) AS g`,
				`UPDATE ` + c.table + ` SET state = 'running', attempt = 1, locked_by = 'n', locked_until = now() + interval '1 minute' WHERE id <= 20`,
				`ANALYZE ` + c.table,
			} {
				if c.noStats && strings.HasPrefix(sql, "ANALYZE") {
					continue
				}
				if _, err := db.Exec(ctx, sql); err != nil {
					t.Fatal(err)
				}
			}
			// The claim as sqlc compiled it.
			rows, err := db.Query(ctx, "EXPLAIN "+querySQL(t, c.goFile, c.query), c.args...)
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			for rows.Next() {
				var line string
				rows.Scan(&line)
				plan = append(plan, line)
			}
			text := strings.Join(plan, "\n")
			if strings.Contains(text, "Seq Scan on "+c.table) || !strings.Contains(text, c.index) {
				t.Errorf("the claim reads the table, or not %s:\n%s", c.index, text)
			}
			// The jobs picked are found by primary key, not by a partial
			// index read whole with the ids as its filter (the limited
			// claim's lock of its picks did so on a table never analyzed).
			if idsByOtherIndex(plan) {
				t.Errorf("the claim looks the jobs it picked up by another index than the primary key:\n%s", text)
			}
		})
	}
}

// TestFairTransactionClaimsLockOnlyWhatTheyTake: a transaction-mode claim
// keeps its locks until its transaction ends, so it locks only the jobs it
// takes; with three tenants of one job each, a claim of one in an open
// transaction leaves the other two to the next claims (three at once: the
// pool holds four connections). Locking each tenant's first job in the
// fair part, as a lease claim may for its statement, left nothing to
// anyone else.
func TestFairTransactionClaimsLockOnlyWhatTheyTake(t *testing.T) {
	eachFairEngine(t, func(t *testing.T, q *fairQueue) {
		ctx := context.Background()
		for i := range 3 {
			if err := q.txPush(ctx, fmt.Sprint("t", i), int32(i)); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[string]bool{}
		for i := range 3 {
			got, err := q.txClaim(t, 1)
			if err != nil || len(got) != 1 {
				t.Fatalf("claim %d of one, with %d transactions holding a job each = %v, %v; want one job", i, i, got, err)
			}
			if seen[got[0].tenant] {
				t.Fatalf("claim %d took tenant %s's job twice", i, got[0].tenant)
			}
			seen[got[0].tenant] = true
		}
	})
}
