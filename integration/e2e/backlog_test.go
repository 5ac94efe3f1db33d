package e2e_test

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/integration/e2e/mysql/myjobs"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/queue"
)

// The backlog suite runs on every engine with backlogs (PostgreSQL, where
// the backlog inherits from the queue table, and MySQL, where it is a
// table of its own), against queue backlogged of each engine's e2e spec
// (fair_by: tenant, backlog: {batch: 10}), through backlogQueue, which
// hides its payload's Go type.

// backlogQueue is one engine's queue backlogged.
type backlogQueue struct {
	e *engine
	// push pushes tenant's job n and returns its id; pushMany pushes its
	// jobs 0 to n-1 in one batch.
	push     func(ctx context.Context, tenant string, n int32, opts ...queue.PushOption) (int64, error)
	pushMany func(ctx context.Context, tenant string, n int) error
	// get reads a job's state and tenant; depth is Depth; schedule runs a
	// step.
	get      func(ctx context.Context, id int64) (queue.State, string, error)
	depth    func(ctx context.Context) (int64, error)
	schedule func(ctx context.Context) (int64, error)
	// claim claims up to max jobs for node; complete completes them.
	claim func(ctx context.Context, node string, max int) ([]fairJob, func() error, error)
}

// backlogAccessor is what backlogQueue uses of a generated accessor of a
// queue with a backlog whose payload is P.
type backlogAccessor[P any] interface {
	Push(ctx context.Context, p P, opts ...queue.PushOption) (queue.PushResult, error)
	PushMany(ctx context.Context, ps []P, opts ...queue.PushOption) (int64, error)
	Claim(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]*queue.Job[P], error)
	CompleteMany(ctx context.Context, jobs []*queue.Job[P]) (int64, error)
	Get(ctx context.Context, id int64) (*queue.Job[P], error)
	Depth(ctx context.Context) (int64, error)
	Schedule(ctx context.Context) (int64, error)
}

func backlogOf[P any](e *engine, q backlogAccessor[P], build func(tenant string, n int32) P, key func(P) (string, int32)) *backlogQueue {
	return &backlogQueue{
		e: e,
		push: func(ctx context.Context, tenant string, n int32, opts ...queue.PushOption) (int64, error) {
			res, err := q.Push(ctx, build(tenant, n), opts...)
			return res.ID, err
		},
		pushMany: func(ctx context.Context, tenant string, n int) error {
			ps := make([]P, n)
			for i := range ps {
				ps[i] = build(tenant, int32(i))
			}
			_, err := q.PushMany(ctx, ps)
			return err
		},
		get: func(ctx context.Context, id int64) (queue.State, string, error) {
			j, err := q.Get(ctx, id)
			if err != nil {
				return "", "", err
			}
			tenant, _ := key(j.Payload)
			return j.State, tenant, nil
		},
		depth:    q.Depth,
		schedule: q.Schedule,
		claim: func(ctx context.Context, node string, max int) ([]fairJob, func() error, error) {
			// A lease of a minute, not the queue's 2 s: the suite is about
			// steps and claims, and a loaded run (-race, every suite at
			// once) may take longer than 2 s to complete a claim, whose
			// jobs would then be claimed again, rightly.
			got, err := q.Claim(ctx, node, max, queue.LeaseFor(time.Minute))
			return fairJobs(got, key), func() error {
				n, err := q.CompleteMany(ctx, got)
				if err == nil && n != int64(len(got)) {
					err = fmt.Errorf("completed %d of %d jobs", n, len(got))
				}
				return err
			}, err
		},
	}
}

// eachBacklogEngine runs test once per engine with backlogs, in parallel
// subtests named after the engines, each with a fresh migrated database.
func eachBacklogEngine(t *testing.T, test func(t *testing.T, q *backlogQueue)) {
	t.Helper()
	t.Parallel()
	for _, name := range dbtest.ThisRun() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t, name)
			var q *backlogQueue
			switch name {
			case dburl.PostgreSQL:
				q = backlogOf(e, jobs.NewBackloggedQueue(poolFor(t, e.db.Address)),
					func(tenant string, n int32) jobs.BackloggedPayload {
						return jobs.BackloggedPayload{Tenant: tenant, N: n}
					},
					func(p jobs.BackloggedPayload) (string, int32) { return p.Tenant, p.N })
			case dburl.MySQL:
				q = backlogOf(e, myjobs.NewBackloggedQueue(e.db.SQL),
					func(tenant string, n int32) myjobs.BackloggedPayload {
						return myjobs.BackloggedPayload{Tenant: tenant, N: n}
					},
					func(p myjobs.BackloggedPayload) (string, int32) { return p.Tenant, p.N })
			default:
				t.Fatalf("%s has no backlog queue in the e2e suite", name)
			}
			test(t, q)
		})
	}
}

// pushBacklogged pushes n jobs of tenant, numbered from 0.
func pushBacklogged(t *testing.T, q *backlogQueue, tenant string, n int) {
	t.Helper()
	if err := q.pushMany(context.Background(), tenant, n); err != nil {
		t.Fatal(err)
	}
}

// tableCounts is how many jobs backlogged_queue holds itself and how
// many its backlog holds.
func (q *backlogQueue) tableCounts(t *testing.T) (queued, backlog int) {
	t.Helper()
	only := q.e.sql("ONLY ", "", "")
	return q.e.count(t, "SELECT count(*) FROM "+only+"backlogged_queue"), q.e.count(t, "SELECT count(*) FROM backlogged_queue_backlog")
}

// TestBacklogStepTakesEachKeysShare: pushes wait in the backlog, where
// Get and Depth see them; a claim that comes up short runs a scheduler
// step, which moves a batch (10) topped up with each tenant's share, so
// tenant a's backlog pushed first takes no more than its share; the next
// step moves only what the queue table lacks.
func TestBacklogStepTakesEachKeysShare(t *testing.T) {
	eachBacklogEngine(t, func(t *testing.T, q *backlogQueue) {
		ctx := context.Background()
		pushBacklogged(t, q, "a", 50)
		pushBacklogged(t, q, "b", 2)
		pushBacklogged(t, q, "c", 2)
		id, err := q.push(ctx, "d", 0)
		if err != nil {
			t.Fatal(err)
		}
		if queued, backlog := q.tableCounts(t); queued != 0 || backlog != 55 {
			t.Fatalf("after the pushes: %d jobs in the queue table, %d in the backlog; want 0 and 55", queued, backlog)
		}
		if state, tenant, err := q.get(ctx, id); err != nil || state != queue.StateAvailable || tenant != "d" {
			t.Fatalf("Get of a job in the backlog = %s %s, %v", state, tenant, err)
		}
		if n, err := q.depth(ctx); err != nil || n != 55 {
			t.Fatalf("Depth = %d, %v; want 55 (the backlog's jobs are due)", n, err)
		}

		// Room 10 over 4 tenants: shares of 3, b, c and d have fewer.
		got, _, err := q.claim(ctx, "node", 4)
		if err != nil || len(got) != 4 {
			t.Fatalf("claim = %d jobs, %v; want 4", len(got), err)
		}
		if queued, backlog := q.tableCounts(t); queued != 8 || backlog != 47 {
			t.Fatalf("after the first step: %d jobs in the queue table, %d in the backlog; want 8 (a:3, b:2, c:2, d:1) and 47", queued, backlog)
		}
		per := map[string]int{}
		rows, err := q.e.db.SQL.Query("SELECT tenant FROM " + q.e.sql("ONLY ", "", "") + "backlogged_queue")
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
		// Jobs moved keep their ids: Get finds the claimed ones running.
		for _, j := range got {
			if state, tenant, err := q.get(ctx, j.id); err != nil || state != queue.StateRunning || tenant != j.tenant {
				t.Errorf("Get of claimed job %d (%s) = %s %s, %v", j.id, j, state, tenant, err)
			}
		}
		if state, _, err := q.get(ctx, id); err != nil || state != queue.StateAvailable && state != queue.StateRunning {
			t.Errorf("Get of d's job after the step = %s, %v", state, err)
		}

		// 4 due jobs left in the queue table: the step tops it up to 10.
		if n, err := q.schedule(ctx); err != nil || n != 6 {
			t.Fatalf("Schedule = %d, %v; want 6 (to 10 due jobs)", n, err)
		}
		if n, err := q.schedule(ctx); err != nil || n != 0 {
			t.Fatalf("Schedule with 10 due jobs in the queue table = %d, %v; want 0", n, err)
		}
		if n, err := q.depth(ctx); err != nil || n != 51 {
			t.Fatalf("Depth = %d, %v; want 51 (55 less the 4 claimed, in both tables)", n, err)
		}
	})
}

// TestBacklogDrainsEveryJobOnce: workers of several goroutines claim and
// complete while others push; every job runs exactly once and both
// tables end empty, whatever order the steps and claims interleave in.
func TestBacklogDrainsEveryJobOnce(t *testing.T) {
	eachBacklogEngine(t, func(t *testing.T, q *backlogQueue) {
		ctx := context.Background()
		const tenants, each = 20, 25
		var pushers sync.WaitGroup
		for i := range tenants {
			pushers.Go(func() {
				if err := q.pushMany(ctx, fmt.Sprintf("t%02d", i), each); err != nil {
					t.Error(err) // not Fatal: this is not the test's goroutine
				}
			})
		}
		var mu sync.Mutex
		seen := map[string]int{}
		ids := map[int64]string{}
		record := func(got []fairJob) {
			mu.Lock()
			defer mu.Unlock()
			for _, j := range got {
				seen[j.String()]++
				if other, ok := ids[j.id]; ok && other != j.String() {
					t.Errorf("id %d is job %s and job %s", j.id, other, j)
				}
				ids[j.id] = j.String()
			}
		}
		var workers sync.WaitGroup
		for w := range 4 {
			workers.Go(func() {
				idle := 0
				for idle < 20 {
					got, complete, err := q.claim(ctx, fmt.Sprintf("node%d", w), 7)
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						idle++
						continue
					}
					idle = 0
					record(got)
					if err := complete(); err != nil {
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
			got, complete, err := q.claim(ctx, "last", 50)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				break
			}
			record(got)
			if err := complete(); err != nil {
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
		if queued, backlog := q.tableCounts(t); queued != 0 || backlog != 0 {
			t.Errorf("after the drain: %d jobs in the queue table, %d in the backlog; want none", queued, backlog)
		}
	})
}

// TestBacklogJobNotDueStays: a job pushed to run later stays in the
// backlog until it is due; the step moves due jobs only.
func TestBacklogJobNotDueStays(t *testing.T) {
	eachBacklogEngine(t, func(t *testing.T, q *backlogQueue) {
		ctx := context.Background()
		if _, err := q.push(ctx, "a", 1, queue.Delay(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got, _, err := q.claim(ctx, "node", 5); err != nil || len(got) != 0 {
			t.Fatalf("claim = %d jobs, %v; want none due", len(got), err)
		}
		if queued, backlog := q.tableCounts(t); queued != 0 || backlog != 1 {
			t.Errorf("%d jobs in the queue table, %d in the backlog; want the job still in the backlog", queued, backlog)
		}
	})
}

// TestBacklogStepAndClaimUseIndexes: over 50,000 jobs of 100 tenants in
// the backlog and 5,000 in the queue table, the scheduler step reads the
// backlog through its fair index, and the claim reads the queue table
// alone through its claim index: neither reads a whole table, and the
// claim never touches the backlog. On MySQL, no statement of the step
// sorts a table's rows (filesort): the pick sorts only the ids it walked.
func TestBacklogStepAndClaimUseIndexes(t *testing.T) {
	eachBacklogEngine(t, func(t *testing.T, q *backlogQueue) {
		e := q.e
		explain := func(query string, args ...any) string {
			return strings.Join(explainPG(t, e.db.SQL, querySQL(t, "jobs/jobsdb/backlogged.sql.go", query), args...), "\n")
		}
		if e.name == dburl.PostgreSQL {
			// One tenant's backlog of 20,000 and 50 tenants' 20, never
			// analyzed (as with autovacuum off), the queue table empty:
			// the step's DELETE finds the jobs it moves by the backlog's
			// primary key. (It read the whole fair index for them,
			// id = ANY(…) as a filter of a partial index's scan, 0.3-1 s
			// a step.)
			e.exec(t, `INSERT INTO backlogged_queue_backlog (tenant, n, max_attempts)
SELECT CASE WHEN g <= 20000 THEN 'a' ELSE 'b' || (g % 50) END, g, 3 FROM generate_series(1, 21000) AS g`)
			if plan := explain("scheduleBacklogged", nil); idsByOtherIndex(strings.Split(plan, "\n")) {
				t.Errorf("on a backlog never analyzed, the step looks its jobs up by another index than the primary key:\n%s", plan)
			}
			e.exec(t, `DELETE FROM backlogged_queue_backlog`)
		}
		for _, stmt := range []string{
			e.sql(`INSERT INTO backlogged_queue_backlog (tenant, n, max_attempts) SELECT 't' || (g % 100), g, 3 FROM generate_series(1, 50000) AS g`,
				`INSERT INTO backlogged_queue_backlog (tenant, n, max_attempts, run_after, created_at)
`+numbers(50000, "SELECT CONCAT('t', n % 100), n, 3, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) FROM g"), ""),
			e.sql(`INSERT INTO backlogged_queue (tenant, n, max_attempts) SELECT 't' || (g % 100), g, 3 FROM generate_series(1, 5000) AS g`,
				// Ids above the backlog's: the queue table takes them from there.
				`INSERT INTO backlogged_queue (id, tenant, n, max_attempts, run_after, created_at)
`+numbers(5000, "SELECT 100000 + n, CONCAT('t', n % 100), n, 3, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) FROM g"), ""),
			e.sql(`ANALYZE backlogged_queue_backlog`, `ANALYZE TABLE backlogged_queue_backlog`, ""),
			e.sql(`ANALYZE backlogged_queue`, `ANALYZE TABLE backlogged_queue`, ""),
		} {
			e.exec(t, stmt)
		}
		switch e.name {
		case dburl.PostgreSQL:
			// The step's one parameter is now; the claim's now, node, lease, max.
			if plan := explain("scheduleBacklogged", nil); strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "backlogged_queue_backlog_fair_idx") {
				t.Errorf("the step reads a whole table, or not the backlog's fair index:\n%s", plan)
			}
			plan := explain("claimBacklogged", nil, "node", "30 seconds", 500)
			if strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "backlogged_queue_backlog") || !strings.Contains(plan, "backlogged_queue_claim_idx") {
				t.Errorf("the claim reads a whole table or the backlog, or not the claim index:\n%s", plan)
			}
		case dburl.MySQL:
			file := "mysql/myjobs/myjobsdb/backlogged.sql.go"
			for _, c := range []struct {
				query string
				args  []any
				index string
			}{
				{"LockScheduleBacklogged", nil, "PRIMARY"},
				{"ScheduleRoomBacklogged", []any{nil}, "backlogged_queue_claim_idx"},
				// max, now (three times), limit.
				{"SchedulePickBacklogged", []any{10, nil, nil, nil, 10}, "backlogged_queue_backlog_fair_idx"},
				{"ScheduleMoveBacklogged", []any{1, 2, 3}, "PRIMARY"},
				{"ScheduleDeleteBacklogged", []any{1, 2, 3}, "PRIMARY"},
				{"GetWaitingBacklogged", []any{1}, "PRIMARY"},
				{"ClaimDueBacklogged", []any{nil, 10}, "backlogged_queue_claim_idx"},
			} {
				stmt := querySQL(t, file, c.query)
				stmt = strings.Replace(stmt, "/*SLICE:ids*/?", "?, ?, ?", 1)
				plan := explainMySQL(t, e.db.SQL, stmt, c.args...)
				uses := false
				for _, line := range plan {
					if line["key"] == c.index {
						uses = true
					}
					if strings.Contains(line["Extra"], "filesort") && !strings.HasPrefix(line["table"], "<derived") && line["table"] != "picked" && !strings.HasPrefix(line["table"], "<subquery") {
						// The pick sorts the few ids it walked (picked),
						// joined to their rows by primary key.
						if !(c.query == "SchedulePickBacklogged" && line["table"] == "backlogged_queue_backlog" && line["key"] == "PRIMARY") {
							t.Errorf("%s sorts a table's rows: %v", c.query, line)
						}
					}
					if line["type"] == "ALL" && !strings.HasPrefix(line["table"], "<") && line["table"] != "picked" && line["table"] != "fair_jobs" && line["table"] != "firsts" && line["table"] != "fair_keys" && line["table"] != "batch" {
						t.Errorf("%s scans %s: %v", c.query, line["table"], line)
					}
					if c.query == "ClaimDueBacklogged" && line["table"] == "backlogged_queue_backlog" {
						t.Errorf("the claim reads the backlog: %v", line)
					}
					if testing.Verbose() {
						t.Logf("%s: %v", c.query, line)
					}
				}
				if !uses {
					t.Errorf("%s does not read %s: %v", c.query, c.index, plan)
				}
			}
		}
	})
}

// numbers is MySQL's select from g, the numbers 1 to n (g.n), made of
// digits rather than by recursion, which MariaDB stops at 1,000 rows.
func numbers(n int, sel string) string {
	return fmt.Sprintf(`WITH digit (d) AS (SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
    UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9),
g (n) AS (SELECT 1 + a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d
    FROM digit AS a, digit AS b, digit AS c, digit AS e, digit AS f)
%s WHERE g.n <= %d`, sel, n)
}

// explainPG is PostgreSQL's EXPLAIN of stmt, a line a row.
func explainPG(t *testing.T, db *sql.DB, stmt string, args ...any) []string {
	t.Helper()
	rows, err := db.Query("EXPLAIN "+stmt, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	return plan
}

// idsByOtherIndex reports whether a PostgreSQL plan looks rows up by a
// list of ids (id = ANY(…)) through an index other than a primary key: a
// partial index read whole, with the ids as its filter.
func idsByOtherIndex(plan []string) bool {
	for i, line := range plan {
		if i > 0 && strings.Contains(line, "Index Cond: (id = ANY") && !strings.Contains(plan[i-1], "_pkey") {
			return true
		}
	}
	return false
}

// explainMySQL is MySQL's EXPLAIN of stmt, a map of column to value a row.
func explainMySQL(t *testing.T, db *sql.DB, stmt string, args ...any) []map[string]string {
	t.Helper()
	rows, err := db.Query("EXPLAIN "+stmt, args...)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", stmt, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var plan []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		line := map[string]string{}
		for i, col := range cols {
			line[col] = vals[i].String
		}
		plan = append(plan, line)
	}
	return plan
}

// TestMySQLBacklogPickOfAThousand: a step's pick walks up to 1,000 jobs
// of a single value (a room of more is filled by several picks, see the
// accessor's schedule) within the server's recursion limit of 1,000
// (MySQL 8's cte_max_recursion_depth, an error there; the test server
// holds MariaDB to it too, max_recursive_iterations, where a longer walk
// ends early with a warning: a pick of 1,200 returns 1,001 jobs).
func TestMySQLBacklogPickOfAThousand(t *testing.T) {
	t.Parallel()
	e := open(t, dburl.MySQL)
	e.exec(t, `INSERT INTO backlogged_queue_backlog (tenant, n, max_attempts, run_after, created_at)
`+numbers(1500, "SELECT 'solo', n, 3, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) FROM g"))
	stmt := querySQL(t, "mysql/myjobs/myjobsdb/backlogged.sql.go", "SchedulePickBacklogged")
	tx, err := e.db.SQL.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.Query(stmt, 1000, nil, nil, nil, 1000)
	if err != nil {
		t.Fatalf("a pick of 1,000 jobs of one value: %v", err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil || n != 1000 {
		t.Errorf("a pick of 1,000 jobs of one value = %d, %v", n, err)
	}
	rows.Close()
}
