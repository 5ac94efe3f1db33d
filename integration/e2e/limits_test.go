package e2e_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/integration/e2e/mysql/myjobs"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/queue"
)

// The limits suite runs on every engine with concurrency limits
// (PostgreSQL and MySQL; SQL Server refuses limits), against queue limited
// of each engine's e2e spec (fair_by: tenant, limits: {per_key: 2,
// global: 5}, lease: 2s, max_attempts: 3) and queue capped (limits:
// {global: 3}), through limitedQueue, which hides their payloads' Go types.

// limJob is a job of limited or capped: its tenant (capped's are ""), its
// n, and the generated job itself, for the accessor's methods.
type limJob struct {
	id      int64
	tenant  string
	n       int32
	attempt int32
	job     any
}

// limitedQueue is one engine's queues limited and capped.
type limitedQueue struct {
	// db is the database, for samples taken on connections of its own.
	db *dbtest.DB
	// sampleLock, where not empty, is the statement that takes limited's
	// claim lock: a sample reads under it (see runningRows).
	sampleLock string
	// push pushes n jobs of each tenant to limited, in one batch.
	push func(ctx context.Context, n int, tenants ...string) error
	// claim, the ways out of running and worker are limited's.
	claim        func(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]limJob, error)
	complete     func(ctx context.Context, j limJob) error
	fail         func(ctx context.Context, j limJob) error
	snooze       func(ctx context.Context, j limJob) error
	release      func(ctx context.Context, j limJob) error
	discard      func(ctx context.Context, j limJob) error
	completeMany func(ctx context.Context, js []limJob) (int64, error)
	releaseNode  func(ctx context.Context, node string) (int64, error)
	limits       func() queue.Limits
	worker       func(handler func(ctx context.Context, j limJob) error, opts ...queue.WorkerOption) interface{ Run(context.Context) error }
	// cappedPush pushes capped's jobs n, in order; cappedClaim and
	// cappedComplete claim and complete them; cappedLimits is its Limits().
	cappedPush     func(ctx context.Context, ns ...int32) error
	cappedClaim    func(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]limJob, error)
	cappedComplete func(ctx context.Context, j limJob) error
	cappedLimits   func() queue.Limits
	// cappedTxClaim claims up to max of capped's jobs in a transaction it
	// begins and leaves open; commit commits it.
	cappedTxClaim func(ctx context.Context, node string, max int) (n int, commit func() error, rollback func(), err error)
}

// limitedAccessor is what limitedQueue uses of a generated lease-mode
// accessor with limits whose payload is P.
type limitedAccessor[P any] interface {
	PushMany(ctx context.Context, ps []P, opts ...queue.PushOption) (int64, error)
	Claim(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]*queue.Job[P], error)
	Complete(ctx context.Context, j *queue.Job[P]) error
	CompleteMany(ctx context.Context, js []*queue.Job[P]) (int64, error)
	Fail(ctx context.Context, j *queue.Job[P], cause error) (queue.State, error)
	Snooze(ctx context.Context, j *queue.Job[P], until time.Time) error
	Release(ctx context.Context, j *queue.Job[P]) error
	Discard(ctx context.Context, j *queue.Job[P], cause error) error
	ReleaseNode(ctx context.Context, node string) (int64, error)
	Limits() queue.Limits
	Worker(handler queue.Handler[P], opts ...queue.WorkerOption) *queue.Worker[P]
}

// limJobs are js as limJob, key reading their tenant and n.
func limJobs[P any](js []*queue.Job[P], key func(P) (string, int32)) []limJob {
	out := make([]limJob, len(js))
	for i, j := range js {
		tenant, n := key(j.Payload)
		out[i] = limJob{id: j.ID, tenant: tenant, n: n, attempt: j.Attempt, job: j}
	}
	return out
}

// limitedOf is limitedQueue over limited (lq) and capped (cq), whose
// payloads build and key (cBuild and cKey) build and read; withTx claims
// from capped in a transaction of the engine's.
func limitedOf[P, C any](db *dbtest.DB, lq limitedAccessor[P], build func(tenant string, n int32) P, key func(P) (string, int32),
	cq limitedAccessor[C], cBuild func(n int32) C, cKey func(C) (string, int32),
	txClaim func(ctx context.Context, node string, max int) ([]*queue.Job[C], func() error, func(), error)) *limitedQueue {
	job := func(j limJob) *queue.Job[P] { return j.job.(*queue.Job[P]) }
	return &limitedQueue{
		db: db,
		push: func(ctx context.Context, n int, tenants ...string) error {
			var ps []P
			for _, tenant := range tenants {
				for i := range n {
					ps = append(ps, build(tenant, int32(i)))
				}
			}
			_, err := lq.PushMany(ctx, ps)
			return err
		},
		claim: func(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]limJob, error) {
			got, err := lq.Claim(ctx, node, max, opts...)
			return limJobs(got, key), err
		},
		complete: func(ctx context.Context, j limJob) error { return lq.Complete(ctx, job(j)) },
		fail: func(ctx context.Context, j limJob) error {
			_, err := lq.Fail(ctx, job(j), errors.New("x"))
			return err
		},
		snooze:  func(ctx context.Context, j limJob) error { return lq.Snooze(ctx, job(j), time.Now().Add(time.Hour)) },
		release: func(ctx context.Context, j limJob) error { return lq.Release(ctx, job(j)) },
		discard: func(ctx context.Context, j limJob) error { return lq.Discard(ctx, job(j), errors.New("x")) },
		completeMany: func(ctx context.Context, js []limJob) (int64, error) {
			gs := make([]*queue.Job[P], len(js))
			for i, j := range js {
				gs[i] = job(j)
			}
			return lq.CompleteMany(ctx, gs)
		},
		releaseNode: lq.ReleaseNode,
		limits:      lq.Limits,
		worker: func(handler func(ctx context.Context, j limJob) error, opts ...queue.WorkerOption) interface{ Run(context.Context) error } {
			return lq.Worker(func(ctx context.Context, j *queue.Job[P]) error {
				return handler(ctx, limJobs([]*queue.Job[P]{j}, key)[0])
			}, opts...)
		},
		cappedPush: func(ctx context.Context, ns ...int32) error {
			cs := make([]C, len(ns))
			for i, n := range ns {
				cs[i] = cBuild(n)
			}
			_, err := cq.PushMany(ctx, cs)
			return err
		},
		cappedClaim: func(ctx context.Context, node string, max int, opts ...queue.ClaimOption) ([]limJob, error) {
			got, err := cq.Claim(ctx, node, max, opts...)
			return limJobs(got, cKey), err
		},
		cappedComplete: func(ctx context.Context, j limJob) error { return cq.Complete(ctx, j.job.(*queue.Job[C])) },
		cappedLimits:   cq.Limits,
		cappedTxClaim: func(ctx context.Context, node string, max int) (int, func() error, func(), error) {
			got, commit, rollback, err := txClaim(ctx, node, max)
			return len(got), commit, rollback, err
		},
	}
}

// limitedQueueOf is limitedQueue on engine e's database, or nil where the
// engine has no limits.
func limitedQueueOf(t *testing.T, e *engine) *limitedQueue {
	t.Helper()
	switch e.name {
	case dburl.PostgreSQL:
		pool := poolFor(t, e.db.Address)
		cq := jobs.NewCappedQueue(pool)
		return limitedOf(e.db, jobs.NewLimitedQueue(pool),
			func(tenant string, n int32) jobs.LimitedPayload { return jobs.LimitedPayload{Tenant: tenant, N: n} },
			func(p jobs.LimitedPayload) (string, int32) { return p.Tenant, p.N },
			cq,
			func(n int32) jobs.CappedPayload { return jobs.CappedPayload{N: n} },
			func(p jobs.CappedPayload) (string, int32) { return "", p.N },
			func(ctx context.Context, node string, max int) ([]*queue.Job[jobs.CappedPayload], func() error, func(), error) {
				tx, err := pool.Begin(ctx)
				if err != nil {
					return nil, nil, nil, err
				}
				got, err := cq.WithTx(tx).Claim(ctx, node, max)
				return got, func() error { return tx.Commit(ctx) }, func() { tx.Rollback(context.Background()) }, err //nolint:errcheck
			})
	case dburl.MySQL:
		cq := myjobs.NewCappedQueue(e.db.SQL)
		q := limitedOf(e.db, myjobs.NewLimitedQueue(e.db.SQL),
			func(tenant string, n int32) myjobs.LimitedPayload { return myjobs.LimitedPayload{Tenant: tenant, N: n} },
			func(p myjobs.LimitedPayload) (string, int32) { return p.Tenant, p.N },
			cq,
			func(n int32) myjobs.CappedPayload { return myjobs.CappedPayload{N: n} },
			func(p myjobs.CappedPayload) (string, int32) { return "", p.N },
			func(ctx context.Context, node string, max int) ([]*queue.Job[myjobs.CappedPayload], func() error, func(), error) {
				tx, err := e.db.SQL.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
				if err != nil {
					return nil, nil, nil, err
				}
				got, err := cq.WithTx(tx).Claim(ctx, node, max)
				return got, tx.Commit, func() { tx.Rollback() }, err //nolint:errcheck
			})
		// LockClaimsLimited's statement.
		q.sampleLock = `SELECT name FROM queuegen_queues WHERE name = 'limited' FOR UPDATE`
		return q
	}
	return nil
}

// eachLimitedEngine runs test once per engine with limits, in parallel
// subtests named after the engines, each with a fresh migrated database.
func eachLimitedEngine(t *testing.T, test func(t *testing.T, q *limitedQueue)) {
	t.Helper()
	t.Parallel()
	for _, name := range dbtest.ThisRun() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			q := limitedQueueOf(t, open(t, name))
			if q == nil {
				t.Fatalf("%s has no limited queue in the e2e suite", name)
			}
			test(t, q)
		})
	}
}

// perTenant counts jobs by tenant.
func perTenant(js []limJob) map[string]int {
	out := map[string]int{}
	for _, j := range js {
		out[j.tenant]++
	}
	return out
}

// runRow is one of limited's running jobs, as a sample read it.
type runRow struct {
	id          int64
	tenant      string
	attempt     int32
	maxAttempts int32
	lockedBy    sql.NullString
	lockedUntil sql.NullTime
}

// freed reports a job whose lease expired on its last attempt before at:
// it is still running (until Reap, or its late holder's completion), but
// it holds no slot, as the claims count (BusyLimited and the per-key
// count: the running jobs, less those), so a sample does not count it.
func (r runRow) freed(at time.Time) bool {
	return r.attempt >= r.maxAttempts && r.lockedUntil.Valid && r.lockedUntil.Time.Before(at)
}

// describe is r for a sample's log: its lease, and whether it held a slot
// at at.
func (r runRow) describe(at time.Time) string {
	return fmt.Sprintf("job %d (%s) attempt %d/%d by %s until %s (slot freed: %v)",
		r.id, r.tenant, r.attempt, r.maxAttempts, r.lockedBy.String, r.lockedUntil.Time.UTC().Format("15:04:05.000000"), r.freed(at))
}

// runningRows reads limited's running jobs in one statement (one
// snapshot), on a connection of the sample's own, and the time before it
// began (the database's host is this one): a lease expired then had
// expired in the snapshot.
//
// On MariaDB the statement runs under the claim lock (sampleLock), in a
// READ COMMITTED transaction of its own, because InnoDB's read view is not
// an atomic snapshot: trx_sys.snapshot_ids reads max_trx_id and then copies
// the active transactions' ids in a lock-free walk of rw_trx_hash, so a
// transaction committed during the walk is visible if the walk reaches its
// slot after it left, and invisible if before. A claim has its id from its
// first statement (the registry row's locking read), while it waits for
// the lock; a walk that passes a completion still active, then reaches the
// slot of a claim that counted that completion and committed meanwhile,
// sees the claim's leases but not the completion that freed their slot. A
// walk slowed or preempted on a loaded machine spans many such pairs: a
// plain sample then counts the completed jobs and their successors, up to
// twice the limit (the failure seen once, 10 of 5 on a heavily loaded
// machine). Under the claim lock no lease commits during the walk, so a
// torn view can only miss completions that the last claim counted as busy
// too, and shows no more than that claim left. The claims' own counts need
// no such care: each runs under the lock, after every earlier claim left
// rw_trx_hash (InnoDB removes a committing transaction from it before it
// releases its locks). PostgreSQL's snapshots are atomic (taken under
// ProcArrayLock), so its samples take no lock.
func (q *limitedQueue) runningRows(t *testing.T) ([]runRow, time.Time) {
	t.Helper()
	ctx := context.Background()
	var db interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	} = q.db.SQL
	if q.sampleLock != "" {
		tx, err := q.db.SQL.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			t.Error(err)
			return nil, time.Now()
		}
		defer tx.Rollback() //nolint:errcheck // read only
		var name string
		if err := tx.QueryRowContext(ctx, q.sampleLock).Scan(&name); err != nil {
			t.Error(err)
			return nil, time.Now()
		}
		db = tx
	}
	at := time.Now()
	rows, err := db.QueryContext(ctx, `
		SELECT id, tenant, attempt, max_attempts, locked_by, locked_until
		FROM limited_queue WHERE state = 'running'`)
	if err != nil {
		t.Error(err)
		return nil, at
	}
	defer rows.Close()
	var out []runRow
	for rows.Next() {
		var r runRow
		if err := rows.Scan(&r.id, &r.tenant, &r.attempt, &r.maxAttempts, &r.lockedBy, &r.lockedUntil); err != nil {
			t.Error(err)
			return nil, at
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Error(err)
	}
	return out, at
}

// slots counts the slots rs's jobs hold at at: the most of one tenant, and
// in all.
func slots(rs []runRow, at time.Time) (perKey, global int) {
	per := map[string]int{}
	for _, r := range rs {
		if r.freed(at) {
			continue
		}
		per[r.tenant]++
		perKey, global = max(perKey, per[r.tenant]), global+1
	}
	return perKey, global
}

// running counts the slots limited's leased jobs hold, on a connection of
// the sample's own: the most per tenant, and in all.
func (q *limitedQueue) running(t *testing.T) (perKey, global int) {
	t.Helper()
	return slots(q.runningRows(t))
}

// left counts limited's jobs.
func (q *limitedQueue) left(t *testing.T) int {
	t.Helper()
	var n int
	if err := q.db.SQL.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM limited_queue`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLimitsHoldInTheClaim: a claim takes no more than the limits leave
// room for, however many it asks for, and each way a job gives up its
// slot lets the next claim take one more.
func TestLimitsHoldInTheClaim(t *testing.T) {
	eachLimitedEngine(t, func(t *testing.T, q *limitedQueue) {
		ctx := context.Background()
		if err := q.push(ctx, 10, "a", "b", "c"); err != nil {
			t.Fatal(err)
		}
		got, err := q.claim(ctx, "node", 100)
		if err != nil {
			t.Fatal(err)
		}
		if per := perTenant(got); len(got) != 5 || per["a"] > 2 || per["b"] > 2 || per["c"] > 2 {
			t.Fatalf("first claim took %v (%d jobs); want 5, at most 2 a tenant", per, len(got))
		}
		if more, err := q.claim(ctx, "node", 100); err != nil || len(more) != 0 {
			t.Fatalf("claim at the global limit = %d jobs, %v; want none", len(more), err)
		}
		// Each way out of running frees one slot.
		frees := []struct {
			name string
			op   func(context.Context, limJob) error
		}{{"Complete", q.complete}, {"Fail", q.fail}, {"Snooze", q.snooze}, {"Release", q.release}, {"Discard", q.discard}}
		for i, f := range frees {
			if err := f.op(ctx, got[i]); err != nil {
				t.Fatalf("%s: %v", f.name, err)
			}
			next, err := q.claim(ctx, "node", 100)
			if err != nil || len(next) != 1 {
				t.Fatalf("claim after %s = %d jobs, %v; want 1", f.name, len(next), err)
			}
			got[i] = next[0]
			if perKey, global := q.running(t); perKey > 2 || global != 5 {
				t.Fatalf("after %s: %d running, %d of one tenant", f.name, global, perKey)
			}
		}
		// Releasing the node frees every slot it held.
		if n, err := q.releaseNode(ctx, "node"); err != nil || n != 5 {
			t.Fatalf("ReleaseNode = %d, %v", n, err)
		}
		if again, err := q.claim(ctx, "other", 100); err != nil || len(again) != 5 {
			t.Fatalf("claim after ReleaseNode = %d jobs, %v; want 5", len(again), err)
		}
	})
}

// TestLimitsPerKeyLeavesRoomToOthers: a tenant at its limit takes nothing
// more, and the global room goes to the tenants that have slots free.
func TestLimitsPerKeyLeavesRoomToOthers(t *testing.T) {
	eachLimitedEngine(t, func(t *testing.T, q *limitedQueue) {
		ctx := context.Background()
		if err := q.push(ctx, 10, "a"); err != nil {
			t.Fatal(err)
		}
		got, err := q.claim(ctx, "node", 10)
		if err != nil || len(got) != 2 {
			t.Fatalf("claim of a's backlog = %d jobs, %v; want a's 2", len(got), err)
		}
		if err := q.push(ctx, 10, "b", "c"); err != nil {
			t.Fatal(err)
		}
		got, err = q.claim(ctx, "node", 10)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(perTenant(got)) != "map[b:2 c:1]" && fmt.Sprint(perTenant(got)) != "map[b:1 c:2]" {
			t.Fatalf("second claim took %v; want the 3 global slots left, to b and c", perTenant(got))
		}
	})
}

// TestLimitsClaimPrefersTheMostRoom: values that tie in a turn go most
// free slots first on MySQL, so a claim of one takes the tenant with
// nothing running over the one with a job running, whichever's jobs are
// older. PostgreSQL's claims rotate instead (engine.FairRotator): each
// claim of one takes the next value with room after the one the last
// claim took, b then a then b, a value with room getting its turn however
// many jobs it runs, and never the same value twice running while
// another waits with room.
func TestLimitsClaimPrefersTheMostRoom(t *testing.T) {
	eachLimitedEngine(t, func(t *testing.T, q *limitedQueue) {
		ctx := context.Background()
		if err := q.push(ctx, 5, "a"); err != nil {
			t.Fatal(err)
		}
		if got, err := q.claim(ctx, "node", 1); err != nil || len(got) != 1 {
			t.Fatalf("claim of a's first = %d jobs, %v", len(got), err)
		}
		if err := q.push(ctx, 5, "b"); err != nil {
			t.Fatal(err)
		}
		want := "b b b b b"
		if q.db.Engine == dburl.PostgreSQL {
			want = "b a b a b"
		}
		var took []string
		for range 5 {
			got, err := q.claim(ctx, "node", 1)
			if err != nil || len(got) != 1 {
				t.Fatalf("claim = %d jobs, %v", len(got), err)
			}
			took = append(took, got[0].tenant)
			if strings.Join(took, " ") != want[:len(strings.Join(took, " "))] {
				t.Fatalf("claims of one took %s; want %s (a has 1 free slot, b 2)", strings.Join(took, " "), want)
			}
			if err := q.release(ctx, got[0]); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestLimitsExpiredLeaseKeepsItsSlot: a job whose lease expired keeps its
// slot and is the one a claim takes again; on its last attempt the slot
// frees at once (Reap makes the job dead later).
func TestLimitsExpiredLeaseKeepsItsSlot(t *testing.T) {
	eachLimitedEngine(t, func(t *testing.T, q *limitedQueue) {
		ctx := context.Background()
		if err := q.push(ctx, 10, "a"); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now().UTC()
		old, err := q.claim(ctx, "dead", 10, queue.ClaimAt(t0))
		if err != nil || len(old) != 2 {
			t.Fatalf("first claim = %d jobs, %v", len(old), err)
		}
		for attempt := int32(2); attempt <= 3; attempt++ {
			t0 = t0.Add(3 * time.Second) // past the 2s lease
			again, err := q.claim(ctx, "live", 10, queue.ClaimAt(t0))
			if err != nil || len(again) != 2 {
				t.Fatalf("claim after expiry = %d jobs, %v; want the 2 expired", len(again), err)
			}
			for _, j := range again {
				if j.attempt != attempt {
					t.Fatalf("claim after expiry took job %d at attempt %d; want an expired job at attempt %d", j.id, j.attempt, attempt)
				}
			}
		}
		// Both are on their last attempt: once those leases expire, their
		// slots go to a's next jobs.
		t0 = t0.Add(3 * time.Second)
		fresh, err := q.claim(ctx, "live", 10, queue.ClaimAt(t0))
		if err != nil || len(fresh) != 2 || fresh[0].attempt != 1 || fresh[1].attempt != 1 {
			t.Fatalf("claim after the last attempt expired = %v, %v; want 2 new jobs", fresh, err)
		}
	})
}

// TestLimitsGlobalOnly: a queue with a global limit and no fair_by takes
// its jobs in order, up to the limit.
func TestLimitsGlobalOnly(t *testing.T) {
	eachLimitedEngine(t, func(t *testing.T, q *limitedQueue) {
		ctx := context.Background()
		if err := q.cappedPush(ctx, 1, 2, 3, 4, 5); err != nil {
			t.Fatal(err)
		}
		got, err := q.cappedClaim(ctx, "node", 10)
		if err != nil || len(got) != 3 || got[0].n != 1 || got[2].n != 3 {
			t.Fatalf("claim = %v, %v; want jobs 1-3", got, err)
		}
		if err := q.cappedComplete(ctx, got[0]); err != nil {
			t.Fatal(err)
		}
		got, err = q.cappedClaim(ctx, "node", 10)
		if err != nil || len(got) != 1 || got[0].n != 4 {
			t.Fatalf("claim after one completed = %v, %v; want job 4", got, err)
		}
		if q.cappedLimits() != (queue.Limits{Global: 3}) {
			t.Errorf("Limits() = %+v", q.cappedLimits())
		}
	})
}

// TestLimitsClaimInCallersTransaction: a copy made by WithTx claims in the
// caller's transaction and holds the claim lock until it ends, so a claim
// outside waits and then counts what the transaction took.
func TestLimitsClaimInCallersTransaction(t *testing.T) {
	eachLimitedEngine(t, func(t *testing.T, q *limitedQueue) {
		ctx := context.Background()
		if err := q.cappedPush(ctx, 1, 2, 3, 4); err != nil {
			t.Fatal(err)
		}
		n, commit, rollback, err := q.cappedTxClaim(ctx, "node", 2)
		if err != nil || n != 2 {
			t.Fatalf("claim in tx = %d jobs, %v", n, err)
		}
		defer rollback()
		outside := make(chan int, 1)
		go func() {
			got, err := q.cappedClaim(ctx, "other", 10)
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
		if err := commit(); err != nil {
			t.Fatal(err)
		}
		if n := <-outside; n != 1 {
			t.Fatalf("claim after the transaction committed took %d jobs; want the 1 slot left", n)
		}
	})
}

// TestLimitsClaimsQueuedOnTheLockCountInTurn: claims that queue up behind
// a held claim lock each count, once granted it, the leases of the claims
// granted it before them (their count is a snapshot taken after the lock,
// not one taken when the claim began), so however many wait, they take
// together no more than the slots the holder left. Deterministic: the
// claims are all waiting before the holder commits, the interleaving that
// a claim whose count read a snapshot from before the lock (both would
// count the same free slots) or a claim that did not wait turns into
// leases past the limit.
func TestLimitsClaimsQueuedOnTheLockCountInTurn(t *testing.T) {
	eachLimitedEngine(t, func(t *testing.T, q *limitedQueue) {
		ctx := context.Background()
		if err := q.cappedPush(ctx, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12); err != nil {
			t.Fatal(err)
		}
		n, commit, rollback, err := q.cappedTxClaim(ctx, "holder", 1)
		if err != nil || n != 1 {
			t.Fatalf("claim in tx = %d jobs, %v", n, err)
		}
		defer rollback()
		const waiters = 4
		took := make(chan int, waiters)
		for i := range waiters {
			go func() {
				got, err := q.cappedClaim(ctx, fmt.Sprintf("waiter-%d", i), 3)
				if err != nil {
					t.Error(err)
				}
				took <- len(got)
			}()
		}
		total, left := 0, waiters
		select {
		case n := <-took:
			// Not Fatal: the claims still running must end before the
			// test's database goes.
			t.Errorf("a claim took %d jobs while another transaction held the claim lock", n)
			total, left = n, waiters-1
		case <-time.After(500 * time.Millisecond):
		}
		err = commit()
		for range left {
			total += <-took
		}
		if err != nil {
			t.Fatal(err)
		}
		if total != 2 {
			t.Fatalf("%d claims queued behind a claim of 1 took %d jobs in all; want the 2 slots of 3 it left", waiters, total)
		}
		var running int
		if err := q.db.SQL.QueryRowContext(ctx, `SELECT COUNT(*) FROM capped_queue WHERE state = 'running'`).Scan(&running); err != nil {
			t.Fatal(err)
		}
		if running != 3 {
			t.Fatalf("%d of capped's jobs running; the global limit is 3", running)
		}
	})
}

// TestLimitsClaimGivenUpWhileWaitingTakesNothing: a claim whose context
// ends while it waits for the claim lock leases nothing, even when the
// lock is freed at that very moment. A claim that sent its statements
// ahead of the lock (PostgreSQL's claim in one batch, waiting on the
// server for the lock) would, once granted it before the cancellation
// reached the server, claim and commit after its caller had given up:
// jobs leased to nobody, their slots held until the leases expire.
// Several rounds, as the loss is a race.
func TestLimitsClaimGivenUpWhileWaitingTakesNothing(t *testing.T) {
	eachLimitedEngine(t, func(t *testing.T, q *limitedQueue) {
		ctx := context.Background()
		if err := q.cappedPush(ctx, 1, 2, 3, 4); err != nil {
			t.Fatal(err)
		}
		for round := range 10 {
			// Each round starts with every job available.
			if _, err := q.db.SQL.ExecContext(ctx, `UPDATE capped_queue SET state = 'available', attempt = 0, locked_by = NULL, locked_until = NULL WHERE state = 'running'`); err != nil {
				t.Fatal(err)
			}
			n, commit, rollback, err := q.cappedTxClaim(ctx, "holder", 1)
			if err != nil || n != 1 {
				rollback()
				t.Fatalf("round %d: claim in tx = %d jobs, %v", round, n, err)
			}
			waitCtx, cancel := context.WithCancel(ctx)
			type answer struct {
				jobs int
				err  error
			}
			done := make(chan answer, 1)
			go func() {
				got, err := q.cappedClaim(waitCtx, "gave-up", 2)
				done <- answer{len(got), err}
			}()
			time.Sleep(100 * time.Millisecond) // the claim waits for the lock
			cancel()
			err = commit() // the lock is freed as the claim gives up
			a := <-done
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // a claim that ran on regardless has committed
			var leased int
			if err := q.db.SQL.QueryRowContext(ctx, `SELECT COUNT(*) FROM capped_queue WHERE state = 'running' AND locked_by = 'gave-up'`).Scan(&leased); err != nil {
				t.Fatal(err)
			}
			// A claim granted the lock before its context ended returns
			// its jobs; one that returned an error must have leased none.
			if a.err != nil && leased != 0 || a.err == nil && leased != a.jobs {
				t.Fatalf("round %d: a claim whose caller gave up while it waited for the claim lock returned %d jobs and %v, and leased %d", round, a.jobs, a.err, leased)
			}
		}
	})
}

// sampler samples limited's running jobs on a connection of its own every
// millisecond until stop, keeping the peaks: the most of one tenant, and
// in all.
func (q *limitedQueue) sampler(t *testing.T) (stop func() (perKey, global int)) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var maxPerKey, maxGlobal int
	wg.Add(1)
	go func() {
		defer wg.Done()
		lim, told := q.limits(), false
		for {
			rs, at := q.runningRows(t)
			perKey, global := slots(rs, at)
			maxPerKey, maxGlobal = max(maxPerKey, perKey), max(maxGlobal, global)
			// The first sample over the limits, job by job, for the
			// failure's diagnosis: whose leases, taken when, by which node.
			if !told && (perKey > lim.PerKey || global > lim.Global) {
				told = true
				for _, r := range rs {
					t.Logf("sample over the limits at %s: %s", at.UTC().Format("15:04:05.000000"), r.describe(at))
				}
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() (int, int) {
		close(done)
		wg.Wait()
		return maxPerKey, maxGlobal
	}
}

// TestLimitsHoldUnderConcurrentClaims: many claimers on their own
// connections, completing what they take, never lease more than the
// limits, sampled after every claim and by a sampler of its own, and work
// every job once.
func TestLimitsHoldUnderConcurrentClaims(t *testing.T) {
	eachLimitedEngine(t, func(t *testing.T, q *limitedQueue) {
		ctx := context.Background()
		tenants := []string{"a", "b", "c", "d", "e", "f"}
		if err := q.push(ctx, 40, tenants...); err != nil {
			t.Fatal(err)
		}
		total := 40 * len(tenants)
		stopSampler := q.sampler(t)
		var done atomic.Int64
		var mu sync.Mutex
		maxPerKey, maxGlobal := 0, 0
		var wg sync.WaitGroup
		// A deadline, so that a claimer that stops on an error leaves the
		// others to fail the counts below rather than wait for its jobs.
		deadline := time.Now().Add(time.Minute)
		for c := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				node := fmt.Sprintf("node-%d", c)
				for done.Load() < int64(total) && time.Now().Before(deadline) {
					// A lease of a minute, not the queue's 2s: on a loaded
					// machine a claimer can stall past 2s between its claim
					// and its completion (seen: CompleteMany = 0 of 3), and
					// its jobs' expiry, a test of its own
					// (TestLimitsSlotsComeBackWhenLeasesExpire), is not
					// this one's.
					got, err := q.claim(ctx, node, 3, queue.LeaseFor(time.Minute))
					if err != nil {
						t.Error(err)
						return
					}
					perKey, global := q.running(t)
					mu.Lock()
					maxPerKey, maxGlobal = max(maxPerKey, perKey), max(maxGlobal, global)
					mu.Unlock()
					if len(got) == 0 {
						time.Sleep(time.Millisecond)
						continue
					}
					time.Sleep(2 * time.Millisecond)
					n, err := q.completeMany(ctx, got)
					if err != nil {
						t.Error(err)
						return
					}
					// A claim took the others again: their leases had
					// expired before this claimer completed them.
					done.Add(n)
					if n != int64(len(got)) {
						t.Errorf("CompleteMany = %d of %d: leases expired while %s held them", n, len(got), node)
					}
				}
			}()
		}
		wg.Wait()
		samplePerKey, sampleGlobal := stopSampler()
		if maxPerKey > 2 || maxGlobal > 5 || samplePerKey > 2 || sampleGlobal > 5 {
			t.Errorf("sampled %d (sampler: %d) running jobs of one tenant and %d (%d) in all; limits are 2 and 5", maxPerKey, samplePerKey, maxGlobal, sampleGlobal)
		}
		if maxGlobal < 5 {
			t.Errorf("never more than %d running at once: the claims left global slots unused", maxGlobal)
		}
		if n := q.left(t); n != 0 || done.Load() != int64(total) {
			t.Errorf("%d jobs left, %d completed of %d", n, done.Load(), total)
		}
	})
}

// TestLimitsSlotsComeBackWhenLeasesExpire: jobs whose holder died (their
// leases expire unextended) keep their slots only until claims take them
// again, so concurrent claimers on other nodes work every job, the
// sampler never seeing more than the limits.
func TestLimitsSlotsComeBackWhenLeasesExpire(t *testing.T) {
	eachLimitedEngine(t, func(t *testing.T, q *limitedQueue) {
		ctx := context.Background()
		if err := q.push(ctx, 6, "a", "b", "c"); err != nil {
			t.Fatal(err)
		}
		// A node takes the 5 slots and dies.
		if got, err := q.claim(ctx, "dead", 100); err != nil || len(got) != 5 {
			t.Fatalf("dead node's claim = %d jobs, %v; want 5", len(got), err)
		}
		stopSampler := q.sampler(t)
		var done atomic.Int64
		var wg sync.WaitGroup
		deadline := time.Now().Add(20 * time.Second)
		for c := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for done.Load() < 18 && time.Now().Before(deadline) {
					got, err := q.claim(ctx, fmt.Sprintf("live-%d", c), 2)
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						time.Sleep(5 * time.Millisecond)
						continue
					}
					n, err := q.completeMany(ctx, got)
					if err != nil {
						t.Error(err)
						return
					}
					done.Add(n)
				}
			}()
		}
		wg.Wait()
		perKey, global := stopSampler()
		if perKey > 2 || global > 5 {
			t.Errorf("sampled %d running jobs of one tenant and %d in all; limits are 2 and 5", perKey, global)
		}
		if done.Load() != 18 || q.left(t) != 0 {
			t.Errorf("%d of 18 jobs completed, %d left: the dead node's slots did not come back", done.Load(), q.left(t))
		}
	})
}

// TestLimitsHoldAcrossWorkers: two Workers (two nodes) with room for many
// more jobs than the limits run no more than the limits at once, and
// keep the slots busy while jobs wait.
func TestLimitsHoldAcrossWorkers(t *testing.T) {
	eachLimitedEngine(t, func(t *testing.T, q *limitedQueue) {
		if err := q.push(context.Background(), 15, "a", "b", "c", "d"); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		now, peak := map[string]int{}, map[string]int{}
		all, peakAll := 0, 0
		var done sync.WaitGroup
		done.Add(60)
		handler := func(ctx context.Context, j limJob) error {
			mu.Lock()
			now[j.tenant]++
			all++
			peak[j.tenant] = max(peak[j.tenant], now[j.tenant])
			peakAll = max(peakAll, all)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			now[j.tenant]--
			all--
			mu.Unlock()
			done.Done()
			return nil
		}
		stopSampler := q.sampler(t)
		for _, node := range []string{"one", "two"} {
			stop := runWorker(t, q.worker(handler, queue.Node(node), queue.Concurrency(20)))
			defer stop() //nolint:errcheck
		}
		finished := make(chan struct{})
		go func() { done.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(30 * time.Second):
			t.Fatal("60 jobs of 20ms were not all worked within 30s")
		}
		samplePerKey, sampleGlobal := stopSampler()
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
		if samplePerKey > 2 || sampleGlobal > 5 {
			t.Errorf("sampled %d running jobs of one tenant and %d in all; limits are 2 and 5", samplePerKey, sampleGlobal)
		}
	})
}

// The rate suite runs on every engine with rate limits (PostgreSQL and
// MySQL; SQL Server refuses rate), against queue throttled of each
// engine's e2e spec (fair_by: tenant, rate: 3 per 1s per tenant) and queue
// paced (rate: 4 per 500ms, limits: {global: 3}), as a limitedQueue:
// throttled in limited's place, paced in capped's.

// rateQueueOf is the rate suite's queues on engine e's database, or nil
// where the engine has no rate limits.
func rateQueueOf(t *testing.T, e *engine) *limitedQueue {
	t.Helper()
	switch e.name {
	case dburl.PostgreSQL:
		pool := poolFor(t, e.db.Address)
		return limitedOf(e.db, jobs.NewThrottledQueue(pool),
			func(tenant string, n int32) jobs.ThrottledPayload { return jobs.ThrottledPayload{Tenant: tenant, N: n} },
			func(p jobs.ThrottledPayload) (string, int32) { return p.Tenant, p.N },
			jobs.NewPacedQueue(pool),
			func(n int32) jobs.PacedPayload { return jobs.PacedPayload{N: n} },
			func(p jobs.PacedPayload) (string, int32) { return "", p.N },
			nil)
	case dburl.MySQL:
		return limitedOf(e.db, myjobs.NewThrottledQueue(e.db.SQL),
			func(tenant string, n int32) myjobs.ThrottledPayload {
				return myjobs.ThrottledPayload{Tenant: tenant, N: n}
			},
			func(p myjobs.ThrottledPayload) (string, int32) { return p.Tenant, p.N },
			myjobs.NewPacedQueue(e.db.SQL),
			func(n int32) myjobs.PacedPayload { return myjobs.PacedPayload{N: n} },
			func(p myjobs.PacedPayload) (string, int32) { return "", p.N },
			nil)
	}
	return nil
}

// eachRateEngine runs test once per engine with rate limits, in parallel
// subtests named after the engines, each with a fresh migrated database.
func eachRateEngine(t *testing.T, test func(t *testing.T, q *limitedQueue)) {
	t.Helper()
	t.Parallel()
	for _, name := range dbtest.ThisRun() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			q := rateQueueOf(t, open(t, name))
			if q == nil {
				t.Fatalf("%s has no rate-limited queues in the e2e suite", name)
			}
			test(t, q)
		})
	}
}

// count runs a query of one count on q's database.
func (q *limitedQueue) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	if err := q.db.SQL.QueryRowContext(context.Background(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// mostInOneSecond is the most of one tenant's jobs of table whose claims
// (attempted_at) lie within one second, in SQL both engines take.
func mostInOneSecond(table string) string {
	return `SELECT COALESCE(MAX(n), 0) FROM (
		SELECT (SELECT COUNT(*) FROM ` + table + ` o
		        WHERE o.tenant = j.tenant AND o.attempted_at > j.attempted_at - INTERVAL '1' SECOND AND o.attempted_at <= j.attempted_at) AS n
		FROM ` + table + ` j WHERE j.attempted_at IS NOT NULL) AS w`
}

// TestRatePerKeyInTheClaim: each tenant gets its rate's worth of jobs in
// a window, and more once the window has moved past them.
func TestRatePerKeyInTheClaim(t *testing.T) {
	eachRateEngine(t, func(t *testing.T, q *limitedQueue) {
		ctx := context.Background()
		if err := q.push(ctx, 10, "a", "b"); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now().UTC()
		claim := func(at time.Duration) map[string]int {
			t.Helper()
			got, err := q.claim(ctx, "node", 100, queue.ClaimAt(t0.Add(at)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := q.completeMany(ctx, got); err != nil {
				t.Fatal(err)
			}
			return perTenant(got)
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
		if n := q.count(t, "SELECT COUNT(*) FROM throttled_queue_rate"); n != 2 {
			t.Errorf("rate log holds %d rows, want the last claim's 2", n)
		}
		if q.limits() != (queue.Limits{Rate: 3, Per: time.Second, RateByKey: true}) {
			t.Errorf("Limits() = %+v", q.limits())
		}
	})
}

// TestRateAndGlobalLimitTogether: a queue with a rate and a global limit
// takes what the tighter of the two leaves.
func TestRateAndGlobalLimitTogether(t *testing.T) {
	eachRateEngine(t, func(t *testing.T, q *limitedQueue) {
		ctx := context.Background()
		var ns []int32
		for i := range 20 {
			ns = append(ns, int32(i))
		}
		if err := q.cappedPush(ctx, ns...); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now().UTC()
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
			got, err := q.cappedClaim(ctx, "node", 100, queue.ClaimAt(t0.Add(c.at)))
			if err != nil || len(got) != c.want {
				t.Fatalf("claim at +%s = %d jobs, %v; want %d (%s)", c.at, len(got), err, c.want, c.why)
			}
			for _, j := range got {
				if err := q.cappedComplete(ctx, j); err != nil {
					t.Fatal(err)
				}
			}
		}
		if q.cappedLimits() != (queue.Limits{Global: 3, Rate: 4, Per: 500 * time.Millisecond}) {
			t.Errorf("Limits() = %+v", q.cappedLimits())
		}
	})
}

// TestRateHoldsUnderConcurrentClaims: 8 claimers on their own connections
// claim a tenant's jobs as fast as they can for 2.5 s; by the jobs'
// attempted_at (the claims' times), no one-second window holds more than 3
// of a tenant's jobs, and each tenant's first second, from its first claim,
// holds exactly 3: the rate is reached, not only kept under. (How many
// seconds the claims span is not asserted: a claim sent before the 2.5 s
// are up can take the claim lock, and read its clock, a window later on a
// loaded machine.)
func TestRateHoldsUnderConcurrentClaims(t *testing.T) {
	eachRateEngine(t, func(t *testing.T, q *limitedQueue) {
		ctx := context.Background()
		if err := q.push(ctx, 40, "a", "b"); err != nil {
			t.Fatal(err)
		}
		end := time.Now().Add(2500 * time.Millisecond)
		var wg sync.WaitGroup
		for c := range 8 {
			wg.Go(func() {
				for time.Now().Before(end) {
					if _, err := q.claim(ctx, fmt.Sprint("node-", c), 2); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(time.Millisecond)
				}
			})
		}
		wg.Wait()
		most := q.count(t, mostInOneSecond("throttled_queue"))
		if most > 3 {
			t.Errorf("%d jobs of one tenant claimed within one second; the rate is 3", most)
		}
		tenants := q.count(t, `SELECT COUNT(DISTINCT tenant) FROM throttled_queue WHERE attempted_at IS NOT NULL`)
		first := q.count(t, `SELECT COALESCE(MIN(n), 0) FROM (
			SELECT (SELECT COUNT(*) FROM throttled_queue o
			        WHERE o.tenant = f.tenant AND o.attempted_at >= f.first AND o.attempted_at < f.first + INTERVAL '1' SECOND) AS n
			FROM (SELECT tenant, MIN(attempted_at) AS first FROM throttled_queue WHERE attempted_at IS NOT NULL GROUP BY tenant) AS f) AS w`)
		if tenants != 2 || first != 3 {
			t.Errorf("%d tenants claimed, the fewest of one tenant's jobs in its first second %d; want 2 tenants, 3 jobs each (the rate)", tenants, first)
		}
	})
}

// meteredRun pushes n jobs to queue metered (rate: 100 per 1s, no other
// limit) of engine e and works them with workers on two nodes of 50
// handlers each until every one is done, or 30 s.
func meteredRun(t *testing.T, e *engine, n int) {
	t.Helper()
	var done sync.WaitGroup
	done.Add(n)
	var run []interface{ Run(context.Context) error }
	switch e.name {
	case dburl.PostgreSQL:
		q := jobs.NewMeteredQueue(poolFor(t, e.db.Address))
		ps := make([]jobs.MeteredPayload, n)
		for i := range ps {
			ps[i] = jobs.MeteredPayload{N: int32(i)}
		}
		if _, err := q.PushMany(context.Background(), ps); err != nil {
			t.Fatal(err)
		}
		for _, node := range []string{"one", "two"} {
			run = append(run, q.Worker(func(context.Context, *queue.Job[jobs.MeteredPayload]) error { done.Done(); return nil },
				queue.Node(node), queue.Concurrency(50)))
		}
	case dburl.MySQL:
		q := myjobs.NewMeteredQueue(e.db.SQL)
		ps := make([]myjobs.MeteredPayload, n)
		for i := range ps {
			ps[i] = myjobs.MeteredPayload{N: int32(i)}
		}
		if _, err := q.PushMany(context.Background(), ps); err != nil {
			t.Fatal(err)
		}
		for _, node := range []string{"one", "two"} {
			run = append(run, q.Worker(func(context.Context, *queue.Job[myjobs.MeteredPayload]) error { done.Done(); return nil },
				queue.Node(node), queue.Concurrency(50)))
		}
	default:
		t.Fatalf("%s has no metered queue in the e2e suite", e.name)
	}
	for _, w := range run {
		defer runWorker(t, w)() //nolint:errcheck
	}
	finished := make(chan struct{})
	go func() { done.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d jobs were not all worked within 30 s", n)
	}
}

// TestRateHoldsAtVolume: two workers of 50 handlers each, as fast as they
// can, claim no more than 100 jobs in any one-second window of the claims'
// times (attempted_at), and take the rate's worth: each whole second from
// the first claim holds 95 to 100 of them. A rate alone (no fair_by, no
// other limit).
func TestRateHoldsAtVolume(t *testing.T) {
	t.Parallel()
	for _, name := range dbtest.ThisRun() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t, name)
			const n = 450
			start := time.Now()
			meteredRun(t, e, n)
			elapsed := time.Since(start)
			most := (&limitedQueue{db: e.db}).count(t, `SELECT COALESCE(MAX(n), 0) FROM (
				SELECT (SELECT COUNT(*) FROM metered_queue o
				        WHERE o.attempted_at > j.attempted_at - INTERVAL '1' SECOND AND o.attempted_at <= j.attempted_at) AS n
				FROM metered_queue j) AS w`)
			if most > 100 {
				t.Errorf("%d jobs claimed within one second; the rate is 100", most)
			}
			// The claims of each whole second from the first.
			rows, err := e.db.SQL.QueryContext(context.Background(), `SELECT attempted_at FROM metered_queue ORDER BY attempted_at`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var times []time.Time
			for rows.Next() {
				var at time.Time
				if err := rows.Scan(&at); err != nil {
					t.Fatal(err)
				}
				times = append(times, at)
			}
			if len(times) != n {
				t.Fatalf("%d jobs claimed, want %d", len(times), n)
			}
			seconds := make([]int, int(times[n-1].Sub(times[0])/time.Second))
			for _, at := range times {
				if s := int(at.Sub(times[0]) / time.Second); s < len(seconds) {
					seconds[s]++
				}
			}
			total := 0
			for s, c := range seconds {
				total += c
				if c < 95 || c > 100 {
					t.Errorf("second %d from the first claim holds %d claims; want 95 to 100", s, c)
				}
			}
			if len(seconds) == 0 {
				t.Fatalf("%d jobs claimed within one second", n)
			}
			t.Logf("%s: %d jobs in %s; at most %d claimed in any 1 s window; whole seconds from the first claim: %v (%.3f× the rate)",
				name, n, elapsed.Round(time.Millisecond), most, seconds, float64(total)/float64(100*len(seconds)))
		})
	}
}
