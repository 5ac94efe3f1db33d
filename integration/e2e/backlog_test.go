package e2e_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/queue"
)

// A backlog is PostgreSQL's: these tests run on PostgreSQL only, against
// queue backlogged of the e2e spec (fair_by: tenant, backlog: {batch: 10}).

// pushBacklogged pushes n jobs of tenant, numbered from 0.
func pushBacklogged(t *testing.T, q *jobs.BackloggedQueue, tenant string, n int) {
	t.Helper()
	pushNumbered(t, q.PushMany, n, func(i int32) jobs.BackloggedPayload { return jobs.BackloggedPayload{Tenant: tenant, N: i} })
}

// tableCounts is how many jobs backlogged_queue holds itself and how
// many its backlog holds.
func tableCounts(t *testing.T, db *pgxpool.Pool) (queued, backlog int) {
	t.Helper()
	err := db.QueryRow(context.Background(),
		"SELECT (SELECT count(*) FROM ONLY backlogged_queue), (SELECT count(*) FROM backlogged_queue_backlog)").Scan(&queued, &backlog)
	if err != nil {
		t.Fatal(err)
	}
	return queued, backlog
}

// TestBacklogStepTakesEachKeysShare: pushes wait in the backlog, where
// Get and Depth see them; a claim that comes up short runs a scheduler
// step, which moves a batch (10) topped up with each tenant's share, so
// tenant a's backlog pushed first takes no more than its share; the next
// step moves only what the queue table lacks.
func TestBacklogStepTakesEachKeysShare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewBackloggedQueue(db)
	pushBacklogged(t, q, "a", 50)
	pushBacklogged(t, q, "b", 2)
	pushBacklogged(t, q, "c", 2)
	res, err := q.Push(ctx, jobs.BackloggedPayload{Tenant: "d", N: 0})
	if err != nil {
		t.Fatal(err)
	}
	if queued, backlog := tableCounts(t, db); queued != 0 || backlog != 55 {
		t.Fatalf("after the pushes: %d jobs in the queue table, %d in the backlog; want 0 and 55", queued, backlog)
	}
	if job, err := q.Get(ctx, res.ID); err != nil || job.State != queue.StateAvailable || job.Payload.Tenant != "d" {
		t.Fatalf("Get of a job in the backlog = %+v, %v", job, err)
	}
	if n, err := q.Depth(ctx); err != nil || n != 55 {
		t.Fatalf("Depth = %d, %v; want 55 (the backlog's jobs are due)", n, err)
	}

	// Room 10 over 4 tenants: shares of 3, b, c and d have fewer.
	got, err := q.Claim(ctx, "node", 4)
	if err != nil || len(got) != 4 {
		t.Fatalf("claim = %d jobs, %v; want 4", len(got), err)
	}
	if queued, backlog := tableCounts(t, db); queued != 8 || backlog != 47 {
		t.Fatalf("after the first step: %d jobs in the queue table, %d in the backlog; want 8 (a:3, b:2, c:2, d:1) and 47", queued, backlog)
	}
	per := map[string]int{}
	rows, err := db.Query(ctx, "SELECT tenant FROM ONLY backlogged_queue")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tenant string
		if err := rows.Scan(&tenant); err != nil {
			t.Fatal(err)
		}
		per[tenant]++
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if fmt.Sprint(per) != "map[a:3 b:2 c:2 d:1]" {
		t.Errorf("the step moved %v; want each tenant's share, a's no more than 3", per)
	}

	// 4 due jobs left in the queue table: the step tops it up to 10.
	if n, err := q.Schedule(ctx); err != nil || n != 6 {
		t.Fatalf("Schedule = %d, %v; want 6 (to 10 due jobs)", n, err)
	}
	if n, err := q.Schedule(ctx); err != nil || n != 0 {
		t.Fatalf("Schedule with 10 due jobs in the queue table = %d, %v; want 0", n, err)
	}
}

// TestBacklogDrainsEveryJobOnce: workers of several goroutines claim and
// complete while others push; every job runs exactly once and both
// tables end empty, whatever order the steps and claims interleave in.
func TestBacklogDrainsEveryJobOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewBackloggedQueue(db)
	const tenants, each = 20, 25
	var pushers sync.WaitGroup
	for i := range tenants {
		pushers.Go(func() {
			batch := make([]jobs.BackloggedPayload, each)
			for n := range batch {
				batch[n] = jobs.BackloggedPayload{Tenant: fmt.Sprintf("t%02d", i), N: int32(n)}
			}
			if _, err := q.PushMany(ctx, batch); err != nil {
				t.Error(err) // not Fatal: this is not the test's goroutine
			}
		})
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var workers sync.WaitGroup
	for w := range 4 {
		workers.Go(func() {
			idle := 0
			for idle < 20 {
				got, err := q.Claim(ctx, fmt.Sprintf("node%d", w), 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					idle++
					continue
				}
				idle = 0
				mu.Lock()
				for _, j := range got {
					seen[fmt.Sprintf("%s/%d", j.Payload.Tenant, j.Payload.N)]++
				}
				mu.Unlock()
				if _, err := q.CompleteMany(ctx, got); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	pushers.Wait()
	workers.Wait()
	// Anything pushed after the workers went idle is drained here.
	for {
		got, err := q.Claim(ctx, "last", 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		for _, j := range got {
			seen[fmt.Sprintf("%s/%d", j.Payload.Tenant, j.Payload.N)]++
		}
		if _, err := q.CompleteMany(ctx, got); err != nil {
			t.Fatal(err)
		}
	}
	var twice []string
	for k, n := range seen {
		if n != 1 {
			twice = append(twice, k)
		}
	}
	sort.Strings(twice)
	if len(seen) != tenants*each || len(twice) > 0 {
		t.Errorf("ran %d distinct jobs of %d; more than once: %v", len(seen), tenants*each, twice)
	}
	if queued, backlog := tableCounts(t, db); queued != 0 || backlog != 0 {
		t.Errorf("after the drain: %d jobs in the queue table, %d in the backlog; want none", queued, backlog)
	}
}

// TestBacklogJobNotDueStays: a job pushed to run later stays in the
// backlog until it is due; the step moves due jobs only.
func TestBacklogJobNotDueStays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewBackloggedQueue(db)
	if _, err := q.Push(ctx, jobs.BackloggedPayload{Tenant: "a", N: 1}, queue.Delay(3600e9)); err != nil {
		t.Fatal(err)
	}
	if got, err := q.Claim(ctx, "node", 5); err != nil || len(got) != 0 {
		t.Fatalf("claim = %d jobs, %v; want none due", len(got), err)
	}
	if queued, backlog := tableCounts(t, db); queued != 0 || backlog != 1 {
		t.Errorf("%d jobs in the queue table, %d in the backlog; want the job still in the backlog", queued, backlog)
	}
}

// TestBacklogStepAndClaimUseIndexes: over 50,000 jobs of 100 tenants in
// the backlog and 5,000 in the queue table, the scheduler step reads the
// backlog through its fair index, and the claim reads the queue table
// alone through its claim index: neither reads a whole table, and the
// claim never touches the backlog.
func TestBacklogStepAndClaimUseIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	for _, sql := range []string{
		`INSERT INTO backlogged_queue_backlog (tenant, n, max_attempts) SELECT 't' || (g % 100), g, 3 FROM generate_series(1, 50000) AS g`,
		`INSERT INTO backlogged_queue (tenant, n, max_attempts) SELECT 't' || (g % 100), g, 3 FROM generate_series(1, 5000) AS g`,
		`ANALYZE backlogged_queue_backlog`,
		`ANALYZE backlogged_queue`,
	} {
		if _, err := db.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	explain := func(query string, args ...any) string {
		rows, err := db.Query(ctx, "EXPLAIN "+querySQL(t, "jobs/jobsdb/backlogged.sql.go", query), args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			rows.Scan(&line)
			plan = append(plan, line)
		}
		return strings.Join(plan, "\n")
	}
	// The step's one parameter is now; the claim's now, node, lease, max.
	if plan := explain("scheduleBacklogged", nil); strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "backlogged_queue_backlog_fair_idx") {
		t.Errorf("the step reads a whole table, or not the backlog's fair index:\n%s", plan)
	}
	plan := explain("claimBacklogged", nil, "node", 30*time.Second, 500)
	if strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "backlogged_queue_backlog") || !strings.Contains(plan, "backlogged_queue_claim_idx") {
		t.Errorf("the claim reads a whole table or the backlog, or not the claim index:\n%s", plan)
	}
}
