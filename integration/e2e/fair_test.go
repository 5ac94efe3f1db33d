package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/queue"
)

// fair_by is PostgreSQL's: these tests run on PostgreSQL only, against
// queue fair of the e2e spec (fair_by: tenant).

// pushTenant pushes n jobs of tenant.
func pushTenant(t *testing.T, q *jobs.FairQueue, tenant string, n int) {
	t.Helper()
	pushNumbered(t, q.PushMany, n, func(i int32) jobs.FairPayload { return jobs.FairPayload{Tenant: tenant, N: i} })
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
// tenants are done, a's jobs fill whole batches again.
func TestFairClaimTakesEachKeyInTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewFairQueue(db)
	pushTenant(t, q, "a", 50)
	pushTenant(t, q, "b", 2)
	pushTenant(t, q, "c", 2)
	got, err := q.Claim(ctx, "node", 6)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string][]int32{}
	for _, j := range got {
		per[j.Payload.Tenant] = append(per[j.Payload.Tenant], j.Payload.N)
	}
	if fmt.Sprint(per) != "map[a:[0 1] b:[0 1] c:[0 1]]" {
		t.Errorf("first claim of 6 took %v; want each tenant's two oldest", per)
	}
	got, err = q.Claim(ctx, "node", 10)
	if err != nil || len(got) != 10 {
		t.Fatalf("second claim = %d, %v", len(got), err)
	}
	for i, j := range got {
		if j.Payload.Tenant != "a" || j.Payload.N != int32(i+2) {
			t.Errorf("second claim's job %d = %s/%d, want a/%d", i, j.Payload.Tenant, j.Payload.N, i+2)
		}
	}
}

// TestFairClaimsOfOneServeEveryKey: values tie in a turn, and the tie is
// drawn at random rather than given to the oldest job, so that a worker
// claiming one freed slot at a time does not serve tenants in the order of
// their oldest jobs: with all of a's jobs older than b's, 40 claims of one
// take b's about half the time (fewer than 5 has odds under 1 in 10^6),
// where they took a's every time.
func TestFairClaimsOfOneServeEveryKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewFairQueue(db)
	pushTenant(t, q, "a", 40)
	pushTenant(t, q, "b", 40)
	per := map[string]int{}
	for i := range 40 {
		got, err := q.Claim(ctx, "node", 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim %d = %v, %v", i, got, err)
		}
		per[got[0].Payload.Tenant]++
	}
	if per["b"] < 5 || per["a"] < 5 {
		t.Errorf("40 claims of one took %v; want both tenants served", per)
	}
}

// TestFairClaimTakesEachKeysHighestPriorityFirst: with priority (queue
// fair has priority: true), each tenant's turn takes its highest-priority
// job first.
func TestFairClaimTakesEachKeysHighestPriorityFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := jobs.NewFairQueue(migrated(t))
	pushTenant(t, q, "a", 10)
	if _, err := q.Push(ctx, jobs.FairPayload{Tenant: "a", N: 99}, queue.Priority(5)); err != nil {
		t.Fatal(err)
	}
	pushTenant(t, q, "b", 2)
	if _, err := q.Push(ctx, jobs.FairPayload{Tenant: "c", N: 7}, queue.Priority(9)); err != nil {
		t.Fatal(err)
	}
	got, err := q.Claim(ctx, "node", 3)
	if err != nil {
		t.Fatal(err)
	}
	var took []string
	for _, j := range got {
		took = append(took, fmt.Sprintf("%s%d", j.Payload.Tenant, j.Payload.N))
	}
	slices.Sort(took)
	// One turn: each tenant's highest-priority job (a's 99 before its
	// older 0), the claim's rows in no particular order.
	if fmt.Sprint(took) != "[a99 b0 c7]" {
		t.Errorf("claim of 3 took %v; want [a99 b0 c7]", took)
	}
}

// TestFairClaimsConcurrently: four claimers draining many tenants at once
// take every job exactly once.
func TestFairClaimsConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewFairQueue(db)
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
				got, err := q.Claim(ctx, fmt.Sprint("node-", c), 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, j := range got {
					seen[j.ID]++
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
}

// TestFairAndLimitedClaimsUseIndexes: the claims of queues fair, limited
// and capped, each over 50,000 queued jobs of 100 tenants with 20 leased,
// read indexes (the fair or claim index, and the lease index), never a
// whole table.
func TestFairAndLimitedClaimsUseIndexes(t *testing.T) {
	t.Parallel()
	db := migrated(t)
	for _, c := range []struct {
		table, goFile, query, fill, index string
	}{
		{"fair_queue", "jobs/jobsdb/fair.sql.go", "claimFair", "tenant, n", "fair_queue_fair_idx"},
		{"limited_queue", "jobs/jobsdb/limited.sql.go", "claimLimited", "tenant, n", "limited_queue_fair_idx"},
		{"capped_queue", "jobs/jobsdb/capped.sql.go", "claimCapped", "n", "capped_queue_claim_idx"},
	} {
		t.Run(c.table, func(t *testing.T) {
			ctx := context.Background()
			values := "'t' || (g % 100), g"
			if c.fill == "n" {
				values = "g"
			}
			for _, sql := range []string{
				`INSERT INTO ` + c.table + ` (` + c.fill + `, max_attempts) SELECT ` + values + `, 3 FROM generate_series(1, 50000) AS g`,
				`UPDATE ` + c.table + ` SET state = 'running', attempt = 1, locked_by = 'n', locked_until = now() + interval '1 minute' WHERE id <= 20`,
				`ANALYZE ` + c.table,
			} {
				if _, err := db.Exec(ctx, sql); err != nil {
					t.Fatal(err)
				}
			}
			// The claim as sqlc compiled it; parameters in sqlc's order
			// (that of the Claim…Params): now, node, lease, max.
			rows, err := db.Query(ctx, "EXPLAIN "+querySQL(t, c.goFile, c.query), nil, "node", 30*time.Second, 500)
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
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewTxfairQueue(db)
	for i := range 3 {
		if _, err := q.Push(ctx, jobs.TxfairPayload{Tenant: fmt.Sprint("t", i), N: int32(i)}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for i := range 3 {
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		got, err := q.Claim(ctx, tx, 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim %d of one, with %d transactions holding a job each = %v, %v; want one job", i, i, got, err)
		}
		if seen[got[0].Payload.Tenant] {
			t.Fatalf("claim %d took tenant %s's job twice", i, got[0].Payload.Tenant)
		}
		seen[got[0].Payload.Tenant] = true
	}
}
