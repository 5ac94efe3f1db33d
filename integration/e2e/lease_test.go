package e2e_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/integration/e2e/payload"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/spec"
	"github.com/queuegen/queuegen/queue"
)

func ptr[T any](v T) *T { return &v }

func TestLeasePushClaimComplete(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		want := payload.Task{Name: "a@example.com", N: 7}
		res, err := q.Push(ctx, want)
		if err != nil || res.ID == 0 || res.Duplicate {
			t.Fatalf("Push = %+v, %v", res, err)
		}
		got, err := q.Claim(ctx, "node-1", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("claimed %d jobs, want 1", len(got))
		}
		job := got[0]
		if diff := cmp.Diff(want, job.Payload); diff != "" {
			t.Errorf("payload (-want +got):\n%s", diff)
		}
		if job.ID != res.ID || job.Attempt != 1 || job.MaxAttempts != 3 || job.State != queue.StateRunning || job.LockedBy != "node-1" {
			t.Errorf("job = %+v", job)
		}
		if job.LockedUntil == nil || job.LockedUntil.Sub(*job.AttemptedAt) != q.LeaseDuration() {
			t.Errorf("lease = %v from %v, want %v", job.LockedUntil, job.AttemptedAt, q.LeaseDuration())
		}
		// What Claim returns is what the database holds.
		stored, err := q.Get(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(job, stored); diff != "" {
			t.Errorf("claimed job and stored row differ (-claimed +stored):\n%s", diff)
		}
		if more, _ := q.Claim(ctx, "node-2", 10); len(more) != 0 {
			t.Errorf("a leased job was claimed again: %+v", more)
		}
		if err := q.Complete(ctx, job); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Get(ctx, job.ID); !errors.Is(err, e.noRows) {
			t.Errorf("after Complete (on_success: delete), Get = %v, want no rows", err)
		}
		if err := q.Complete(ctx, job); !errors.Is(err, queue.ErrNotHeld) {
			t.Errorf("second Complete = %v, want ErrNotHeld", err)
		}
	})
}

// TestLeaseClaimOrderPriorityAndRunAfter: claims take due jobs by
// priority, then run_after, and never a job not yet due.
// Not on Citus: a distributed queue orders claims within a bucket only
// (each claim reads one bucket's shard), which the README's "Citus" says.
func TestLeaseClaimOrderPriorityAndRunAfter(t *testing.T) {
	eachEngineOf(t, withoutCitus(), func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		push := func(name string, opts ...queue.PushOption) {
			if _, err := q.Push(ctx, task(name), opts...); err != nil {
				t.Fatal(err)
			}
		}
		push("low-1")
		push("high", queue.Priority(5))
		push("low-2")
		push("later", queue.Delay(time.Hour))
		push("scheduled", queue.RunAfter(time.Now().Add(time.Hour)))

		got, err := q.Claim(ctx, "n", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("claimed %d jobs, want the three due jobs", len(got))
		}
		for _, j := range got {
			if err := q.Release(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		first, err := q.Claim(ctx, "n", 1)
		if err != nil || len(first) != 1 || first[0].Payload.Name != "high" {
			t.Fatalf("Claim(1) = %v, %v; want the priority job", first, err)
		}
		second, err := q.Claim(ctx, "n", 1)
		if err != nil || len(second) != 1 || second[0].Payload.Name != "low-1" {
			t.Fatalf("Claim(1) = %v, %v; want the oldest low job", second, err)
		}
		// Finish them, or their leases (expired two hours on) are claimed again.
		if _, err := q.CompleteMany(ctx, append(first, second...)); err != nil {
			t.Fatal(err)
		}
		// Claiming "as of" two hours from now reaches the delayed jobs.
		later, err := q.Claim(ctx, "n", 10, queue.ClaimAt(time.Now().Add(2*time.Hour)))
		if err != nil || len(later) != 3 {
			t.Fatalf("Claim at +2h = %d jobs, %v; want low-2 and the two delayed ones", len(later), err)
		}
	})
}

func TestLeaseExpiredIsReclaimedAndOldHolderFenced(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		if _, err := q.Push(ctx, task("x")); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		old, err := q.Claim(ctx, "dead-node", 1, queue.ClaimAt(t0), queue.LeaseFor(time.Second))
		if err != nil || len(old) != 1 {
			t.Fatalf("first claim = %v, %v", old, err)
		}
		// Before expiry nobody else gets it.
		if got, _ := q.Claim(ctx, "live-node", 1, queue.ClaimAt(t0.Add(500*time.Millisecond))); len(got) != 0 {
			t.Fatalf("claimed a job with a live lease: %+v", got)
		}
		// After expiry it is claimable again, as attempt 2.
		fresh, err := q.Claim(ctx, "live-node", 1, queue.ClaimAt(t0.Add(2*time.Second)))
		if err != nil || len(fresh) != 1 {
			t.Fatalf("claim after expiry = %v, %v", fresh, err)
		}
		if fresh[0].ID != old[0].ID || fresh[0].Attempt != 2 || fresh[0].LockedBy != "live-node" {
			t.Fatalf("reclaimed job = %+v", fresh[0])
		}
		// The old holder can no longer complete, fail, extend, snooze or release.
		for name, op := range map[string]func() error{
			"Complete": func() error { return q.Complete(ctx, old[0]) },
			"Fail":     func() error { _, err := q.Fail(ctx, old[0], errors.New("late")); return err },
			"Extend":   func() error { return q.Extend(ctx, old[0], time.Minute) },
			"Snooze":   func() error { return q.Snooze(ctx, old[0], time.Now()) },
			"Release":  func() error { return q.Release(ctx, old[0]) },
			"Discard":  func() error { return q.Discard(ctx, old[0], errors.New("late")) },
		} {
			if err := op(); !errors.Is(err, queue.ErrNotHeld) {
				t.Errorf("stale %s = %v, want ErrNotHeld", name, err)
			}
		}
		if n, err := q.CompleteMany(ctx, old); err != nil || n != 0 {
			t.Errorf("stale CompleteMany = %v, %v; want nothing completed", n, err)
		}
		if states, err := q.FailMany(ctx, old, []error{errors.New("late")}); err != nil || len(states) != 0 {
			t.Errorf("stale FailMany = %v, %v; want nothing failed", states, err)
		}
		if ids, err := q.ExtendMany(ctx, old, time.Hour); err != nil || len(ids) != 0 {
			t.Errorf("stale ExtendMany = %v, %v; want nothing extended", ids, err)
		}
		if err := q.Complete(ctx, fresh[0]); err != nil {
			t.Errorf("the current holder's Complete = %v", err)
		}
	})
}

func TestLeaseFailBackoffAndDead(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		res, err := q.Push(ctx, task("x"), queue.MaxAttempts(2))
		if err != nil {
			t.Fatal(err)
		}
		claim := func(at time.Time) *queue.Job[payload.Task] {
			t.Helper()
			got, err := q.Claim(ctx, "n", 1, queue.ClaimAt(at))
			if err != nil || len(got) != 1 {
				t.Fatalf("claim = %v, %v", got, err)
			}
			return got[0]
		}
		job := claim(time.Now())
		state, err := q.Fail(ctx, job, errors.New("boom 1"))
		if err != nil || state != queue.StateAvailable {
			t.Fatalf("first Fail = %q, %v; want available (retry)", state, err)
		}
		after, _ := q.Get(ctx, res.ID)
		// Backoff min 1s, jitter 0: retried a second later, not before.
		if d := time.Until(after.RunAfter); d < 0 || d > 2*time.Second {
			t.Errorf("retry run_after is %v from now, want about 1s", d)
		}
		if got, _ := q.Claim(ctx, "n", 1); len(got) != 0 {
			t.Errorf("a failed job was claimable before its backoff passed")
		}
		job = claim(time.Now().Add(5 * time.Second))
		state, err = q.Fail(ctx, job, errors.New("boom 2"))
		if err != nil || state != queue.StateDead {
			t.Fatalf("last Fail = %q, %v; want dead", state, err)
		}
		dead, err := q.Get(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"boom 1", "boom 2"}, dead.Errors); diff != "" || dead.State != queue.StateDead || dead.LockedBy != "" {
			t.Errorf("dead job = %+v; errors (-want +got):\n%s", dead, diff)
		}
		failedAt(t, dead, 1, 2)
		if got, _ := q.Claim(ctx, "n", 1, queue.ClaimAt(time.Now().Add(time.Hour))); len(got) != 0 {
			t.Errorf("a dead job was claimed")
		}
	})
}

// TestLeaseExtendMany: ExtendMany moves the leases of the jobs still held
// at their attempt, in one statement, and returns exactly their ids; a job
// claimed again behind the caller's back keeps its new holder's lease, and
// the jobs passed in are left as they were.
func TestLeaseExtendMany(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		pushTasks(t, q, 3)
		got, err := q.Claim(ctx, "n", 3, queue.LeaseFor(time.Minute))
		if err != nil || len(got) != 3 {
			t.Fatalf("claim = %d, %v", len(got), err)
		}
		stolen := got[1]
		steal(t, e, stolen.ID)
		thiefs, _ := q.Get(ctx, stolen.ID)
		before := *got[0].LockedUntil

		ids, err := q.ExtendMany(ctx, got, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		want := []int64{got[0].ID, got[2].ID}
		slices.Sort(want) // claim order need not be id order (Citus: per bucket)
		if !slices.Equal(ids, want) {
			t.Errorf("ExtendMany extended %v, want %v (not the stolen %d)", ids, want, stolen.ID)
		}
		for _, job := range []*queue.Job[payload.Task]{got[0], got[2]} {
			stored, _ := q.Get(ctx, job.ID)
			if !stored.LockedUntil.After(before.Add(50 * time.Minute)) {
				t.Errorf("job %d's lease ends %v, want about an hour from now", job.ID, stored.LockedUntil)
			}
		}
		if !got[0].LockedUntil.Equal(before) {
			t.Errorf("ExtendMany changed the job passed in: LockedUntil %v, was %v", got[0].LockedUntil, before)
		}
		if stored, _ := q.Get(ctx, stolen.ID); !stored.LockedUntil.Equal(*thiefs.LockedUntil) || stored.LockedBy != "thief" {
			t.Errorf("the stolen job's lease was touched: %v by %q, the thief's was %v", stored.LockedUntil, stored.LockedBy, thiefs.LockedUntil)
		}
	})
}

func TestLeaseSnoozeExtendReleaseDiscard(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		for i := range 3 {
			if _, err := q.Push(ctx, task(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		got, err := q.Claim(ctx, "n", 3)
		if err != nil || len(got) != 3 {
			t.Fatalf("claim = %d, %v", len(got), err)
		}
		snoozed, released, discarded := got[0], got[1], got[2]

		before := *released.LockedUntil
		if err := q.Extend(ctx, released, time.Hour); err != nil {
			t.Fatal(err)
		}
		if !released.LockedUntil.After(before.Add(50 * time.Minute)) {
			t.Errorf("Extend moved the lease to %v, want about an hour from now", released.LockedUntil)
		}
		if stored, _ := q.Get(ctx, released.ID); !stored.LockedUntil.Equal(*released.LockedUntil) {
			t.Errorf("Extend recorded %v, the database holds %v", released.LockedUntil, stored.LockedUntil)
		}

		at := time.Now().Add(time.Hour).Truncate(time.Microsecond)
		if err := q.Snooze(ctx, snoozed, at); err != nil {
			t.Fatal(err)
		}
		s, _ := q.Get(ctx, snoozed.ID)
		if s.State != queue.StateAvailable || !s.RunAfter.Equal(at) || s.MaxAttempts != snoozed.MaxAttempts+1 {
			t.Errorf("snoozed job = %+v; want available at %v with one more attempt allowed", s, at)
		}

		if err := q.Release(ctx, released); err != nil {
			t.Fatal(err)
		}
		again, err := q.Claim(ctx, "m", 5)
		if err != nil || len(again) != 1 || again[0].ID != released.ID || again[0].Attempt != 2 {
			t.Fatalf("claim after release = %+v, %v", again, err)
		}

		if err := q.Discard(ctx, discarded, errors.New("not wanted")); err != nil {
			t.Fatal(err)
		}
		d, _ := q.Get(ctx, discarded.ID)
		if d.State != queue.StateDead || len(d.Errors) != 1 || d.Errors[0] != "not wanted" {
			t.Errorf("discarded job = %+v", d)
		}
	})
}

func TestLeaseReleaseNodeAndReap(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		// The first job has a second attempt; the others are on their last.
		for i, attempts := range []int32{2, 1, 1, 1} {
			if _, err := q.Push(ctx, task(fmt.Sprint(i)), queue.MaxAttempts(attempts)); err != nil {
				t.Fatal(err)
			}
		}
		crashed, _ := q.Claim(ctx, "crashed", 2)
		other, _ := q.Claim(ctx, "other", 2, queue.LeaseFor(time.Second))
		if len(crashed) != 2 || len(other) != 2 || crashed[0].MaxAttempts != 2 || crashed[1].MaxAttempts != 1 {
			t.Fatalf("claims = %+v, %+v", crashed, other)
		}
		n, err := q.ReleaseNode(ctx, "crashed")
		if err != nil || n != 2 {
			t.Fatalf("ReleaseNode = %d, %v; want 2", n, err)
		}
		// The crash may have been the job's doing: the one with an attempt
		// left is due again, the one on its last attempt is dead (else a
		// job that kills its worker would run for ever under a stable node
		// name).
		if got, _ := q.Get(ctx, crashed[0].ID); got.State != queue.StateAvailable || got.Attempt != 1 || len(got.Errors) != 0 {
			t.Errorf("released job with an attempt left = %+v; want available, attempt 1 counted", got)
		}
		if got, _ := q.Get(ctx, crashed[1].ID); got.State != queue.StateDead || len(got.Errors) != 1 || got.Errors[0] != "its node restarted during its last attempt" {
			t.Errorf("released job on its last attempt = %+v; want dead, the restart recorded", got)
		} else {
			failedAt(t, got, got.Attempt)
		}
		// The other node's leases, once expired, are on their last attempt:
		// claims pass them over and Reap makes them dead.
		e.exec(t, e.sql("UPDATE task_queue SET locked_until = now() - interval '1 minute' WHERE locked_by = 'other'",
			"UPDATE task_queue SET locked_until = UTC_TIMESTAMP(6) - INTERVAL 1 MINUTE WHERE locked_by = 'other'",
			"UPDATE task_queue SET locked_until = DATEADD(minute, -1, SYSUTCDATETIME()) WHERE locked_by = 'other'"))
		if got, _ := q.Claim(ctx, "n", 10); len(got) != 1 || got[0].ID != crashed[0].ID {
			t.Errorf("claim after ReleaseNode got %d jobs, want the 1 released with an attempt left (not the dead one, nor the expired last attempts)", len(got))
		}
		// Reap is bounded: one batch of one, then the rest.
		if n, err = q.Reap(ctx, 1); err != nil || n != 1 {
			t.Fatalf("Reap(1) = %d, %v; want 1", n, err)
		}
		if n, err = q.Reap(ctx, 10); err != nil || n != 1 {
			t.Fatalf("Reap(10) = %d, %v; want the other 1", n, err)
		}
		for _, j := range other {
			got, _ := q.Get(ctx, j.ID)
			if got.State != queue.StateDead || len(got.Errors) != 1 {
				t.Errorf("reaped job = %+v", got)
			}
			failedAt(t, got, got.Attempt)
		}
	})
}

func TestLeaseUniqueKey(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		first, err := q.Push(ctx, task("a"), queue.UniqueKey("welcome:42"))
		if err != nil || first.Duplicate {
			t.Fatalf("first Push = %+v, %v", first, err)
		}
		dup, err := q.Push(ctx, task("a"), queue.UniqueKey("welcome:42"))
		if err != nil || !dup.Duplicate || dup.ID != 0 {
			t.Fatalf("duplicate Push = %+v, %v; want Duplicate", dup, err)
		}
		if other, err := q.Push(ctx, task("a"), queue.UniqueKey("welcome:43")); err != nil || other.Duplicate {
			t.Fatalf("other key Push = %+v, %v", other, err)
		}
		// Still held while running; free once finished. (Both jobs are
		// claimed: which comes first is the claim order's, which on a
		// distributed queue holds within a bucket only.)
		got, _ := q.Claim(ctx, "n", 2)
		if len(got) != 2 {
			t.Fatalf("claimed %d jobs, want both", len(got))
		}
		if dup, _ := q.Push(ctx, task("a"), queue.UniqueKey("welcome:42")); !dup.Duplicate {
			t.Errorf("a running job's key was pushed again")
		}
		for _, j := range got {
			if err := q.Complete(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		if again, err := q.Push(ctx, task("a"), queue.UniqueKey("welcome:42")); err != nil || again.Duplicate {
			t.Errorf("Push after completion = %+v, %v; want inserted", again, err)
		}
		// Concurrent pushes of one key: exactly one inserts.
		var wg sync.WaitGroup
		inserted := make(chan int64, 20)
		for range 20 {
			wg.Go(func() {
				r, err := q.Push(ctx, task("c"), queue.UniqueKey("race"))
				if err != nil {
					t.Error(err)
				}
				if !r.Duplicate {
					inserted <- r.ID
				}
			})
		}
		wg.Wait()
		close(inserted)
		if n := len(inserted); n != 1 {
			t.Errorf("%d concurrent pushes of one key inserted, want 1", n)
		}
		// Queues without unique: true refuse the option.
		if _, err := e.kept.Push(ctx, task("k"), queue.UniqueKey("k")); !errors.Is(err, queue.ErrNoUniqueKey) {
			t.Errorf("UniqueKey on a queue without one = %v, want ErrNoUniqueKey", err)
		}
	})
}

// TestLeasePushOfAHeldKey: while a transaction that pushed a unique key is
// open, two more pushes of the key wait for it; once it rolls back, one of
// them inserts and the other reports Duplicate, and neither fails. On
// MySQL and MariaDB the two waiting pushes deadlock (each has the key's
// lock the rollback freed and wants the other's), and the server rolls one
// back: this catches a push that is not sent again when it is the victim.
func TestLeasePushOfAHeldKey(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		for round := range 3 {
			key := fmt.Sprintf("held:%d:%d", time.Now().UnixNano(), round)
			rollback, err := e.pushOpen(ctx, task("held"), queue.UniqueKey(key))
			if err != nil {
				t.Fatal(err)
			}
			type pushed struct {
				res queue.PushResult
				err error
			}
			results := make(chan pushed, 2)
			for range 2 {
				go func() {
					res, err := e.task.Push(ctx, task("waiting"), queue.UniqueKey(key))
					results <- pushed{res, err}
				}()
			}
			e.awaitLockWaits(t, 2, key)
			rollback()
			inserted := 0
			for range 2 {
				r := <-results
				if r.err != nil {
					t.Fatalf("round %d: a push waiting on a rolled-back key failed: %v", round, r.err)
				}
				if !r.res.Duplicate {
					inserted++
				}
			}
			if inserted != 1 {
				t.Fatalf("round %d: %d of the two waiting pushes inserted, want 1", round, inserted)
			}
		}
	})
}

// TestLeaseConcurrentClaimsExactlyOnce: 16 goroutines claim from one set
// of jobs; every job is claimed exactly once.
func TestLeaseConcurrentClaimsExactlyOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		const total = 2000
		pushTasks(t, q, total)
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				for {
					got, err := q.Claim(ctx, fmt.Sprint("w", w), 7)
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
					if done, err := q.CompleteMany(ctx, got); err != nil || int(done) != len(got) {
						t.Errorf("CompleteMany = %d of %d, %v", done, len(got), err)
					}
				}
			})
		}
		wg.Wait()
		if len(seen) != total {
			t.Errorf("%d distinct jobs claimed, want %d", len(seen), total)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("job %d claimed %d times", id, n)
			}
		}
		if left := e.count(t, "SELECT count(*) FROM task_queue"); left != 0 {
			t.Errorf("%d rows left after completing all", left)
		}
	})
}

// TestLeaseBatchesOutOfIDOrder: the batch statements (CompleteMany,
// ExtendMany, FailManyAfter) fence each job by its own attempt, and give
// each its own message and delay, whatever order the batch comes in. On
// PostgreSQL the statements find a row's place in their arrays by binary
// search, which needs the ids in ascending order: an accessor that sent
// them as given (here in descending order) would leave held jobs
// unchanged, and one that sorted the ids but not the arrays beside them
// would give a job another's message or delay.
func TestLeaseBatchesOutOfIDOrder(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		pushTasks(t, q, 6)
		got, err := q.Claim(ctx, "n", 6, queue.LeaseFor(time.Minute))
		if err != nil || len(got) != 6 {
			t.Fatalf("claim = %d, %v", len(got), err)
		}
		slices.SortFunc(got, func(a, b *queue.Job[payload.Task]) int {
			switch {
			case a.ID > b.ID:
				return -1
			case a.ID < b.ID:
				return 1
			}
			return 0
		})
		// got[1], got[3] and got[5] are claimed again by another node: the
		// copies here are stale.
		for _, i := range []int{1, 3, 5} {
			steal(t, e, got[i].ID)
		}
		held := []int64{got[0].ID, got[2].ID, got[4].ID}

		ids, err := q.ExtendMany(ctx, got, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		slices.Sort(held)
		if !slices.Equal(ids, held) {
			t.Errorf("ExtendMany extended %v, want the held %v", ids, held)
		}

		delays := []time.Duration{5 * time.Minute, 4 * time.Minute, 3 * time.Minute, 2 * time.Minute}
		causes := []error{errors.New("e0"), errors.New("e1"), errors.New("e2"), errors.New("e3")}
		states, err := q.FailManyAfter(ctx, got[:4], causes, delays)
		if err != nil || len(states) != 2 || states[got[0].ID] != queue.StateAvailable || states[got[2].ID] != queue.StateAvailable {
			t.Fatalf("FailManyAfter = %v, %v; want jobs %d and %d available", states, err, got[0].ID, got[2].ID)
		}
		for _, i := range []int{0, 2} {
			stored, _ := q.Get(ctx, got[i].ID)
			if want := []string{fmt.Sprint("e", i)}; !slices.Equal(stored.Errors, want) {
				t.Errorf("job %d's errors = %q, want %q", got[i].ID, stored.Errors, want)
			}
			if d := time.Until(stored.RunAfter); d < delays[i]-30*time.Second || d > delays[i]+30*time.Second {
				t.Errorf("job %d is retried in %v, want %v", got[i].ID, d, delays[i])
			}
		}
		for _, i := range []int{1, 3} {
			if stored, _ := q.Get(ctx, got[i].ID); stored.LockedBy != "thief" || len(stored.Errors) != 0 {
				t.Errorf("FailManyAfter changed the stolen job %d: held by %q, errors %q", got[i].ID, stored.LockedBy, stored.Errors)
			}
		}

		if n, err := q.CompleteMany(ctx, []*queue.Job[payload.Task]{got[5], got[4], got[3]}); err != nil || n != 1 {
			t.Fatalf("CompleteMany = %d, %v; want 1 (job %d)", n, err, got[4].ID)
		}
		if stored, err := q.Get(ctx, got[4].ID); err == nil && stored.State == queue.StateRunning {
			t.Errorf("job %d is still running after CompleteMany", got[4].ID)
		}
		for _, i := range []int{3, 5} {
			if stored, _ := q.Get(ctx, got[i].ID); stored.State != queue.StateRunning || stored.LockedBy != "thief" {
				t.Errorf("CompleteMany changed the stolen job %d: %q, held by %q", got[i].ID, stored.State, stored.LockedBy)
			}
		}
	})
}

// TestLeaseBatchOfTwoAttempts: a batch whose jobs hold different attempts
// (some claimed again after a release) is fenced job by job. MySQL's batch
// statements fence by one attempt, and the accessor sends one for each
// attempt in the batch: an accessor that sent only the first attempt's, or
// fenced every job by one attempt, would leave held jobs unchanged or
// change a stale one.
func TestLeaseBatchOfTwoAttempts(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		pushTasks(t, q, 4)
		first, err := q.Claim(ctx, "n", 4, queue.LeaseFor(time.Minute))
		if err != nil || len(first) != 4 {
			t.Fatalf("claim = %d, %v", len(first), err)
		}
		a, b, c, d := first[0], first[1], first[2], first[3]
		for _, job := range []*queue.Job[payload.Task]{b, c} {
			if err := q.Release(ctx, job); err != nil {
				t.Fatal(err)
			}
		}
		again, err := q.Claim(ctx, "n", 4, queue.LeaseFor(time.Minute))
		if err != nil || len(again) != 2 || again[0].Attempt != 2 || again[1].Attempt != 2 {
			t.Fatalf("claim after release = %+v, %v; want 2 jobs at attempt 2", again, err)
		}
		steal(t, e, d.ID) // d's copy here is stale
		b2, c2 := again[0], again[1]
		if b2.ID != b.ID {
			b2, c2 = c2, b2
		}

		ids, err := q.ExtendMany(ctx, []*queue.Job[payload.Task]{d, c2, a, b2}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		want := []int64{a.ID, b.ID, c.ID}
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Errorf("ExtendMany extended %v, want %v (attempts 1 and 2; not the stale %d)", ids, want, d.ID)
		}
		states, err := q.FailManyAfter(ctx, []*queue.Job[payload.Task]{b2, d}, []error{errors.New("b"), errors.New("d")}, []time.Duration{time.Hour, time.Hour})
		if err != nil || len(states) != 1 || states[b.ID] != queue.StateAvailable {
			t.Errorf("FailManyAfter = %v, %v; want job %d available, the stale %d untouched", states, err, b.ID, d.ID)
		}
		if n, err := q.CompleteMany(ctx, []*queue.Job[payload.Task]{c2, d, a}); err != nil || n != 2 {
			t.Errorf("CompleteMany = %d, %v; want 2 (jobs %d and %d)", n, err, a.ID, c.ID)
		}
		if stored, _ := q.Get(ctx, d.ID); stored.State != queue.StateRunning || stored.LockedBy != "thief" {
			t.Errorf("the stale job %d was changed: %q, held by %q", d.ID, stored.State, stored.LockedBy)
		}
	})
}

func TestLeaseBatchFailAndPushManyAt(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		at := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
		if n, err := q.PushMany(ctx, []payload.Task{task("a"), task("b"), task("c")}, queue.RunAfter(at), queue.MaxAttempts(2)); err != nil || n != 3 {
			t.Fatalf("PushMany at = %d, %v", n, err)
		}
		if _, err := q.PushMany(ctx, []payload.Task{task("d")}, queue.UniqueKey("k")); !errors.Is(err, queue.ErrPushManyOption) {
			t.Errorf("PushMany with UniqueKey = %v, want ErrPushManyOption", err)
		}
		got, err := q.Claim(ctx, "n", 10)
		if err != nil || len(got) != 3 {
			t.Fatalf("claim = %d, %v", len(got), err)
		}
		for _, j := range got {
			if !j.RunAfter.Equal(at) {
				t.Errorf("run_after = %v, want %v", j.RunAfter, at)
			}
		}
		// Attempt 1 of 2: each is retried, after its own delay or at its own
		// time.
		delays := []time.Duration{time.Minute, 2 * time.Minute, 0}
		states, err := q.FailManyAfter(ctx, got[:2], []error{errors.New("e1"), errors.New("e2")}, delays[:2])
		if err != nil || len(states) != 2 || states[got[0].ID] != queue.StateAvailable || states[got[1].ID] != queue.StateAvailable {
			t.Fatalf("FailManyAfter = %v, %v; want both available", states, err)
		}
		retryAt := time.Now().Add(3 * time.Hour).Truncate(time.Microsecond)
		if states, err := q.FailManyAt(ctx, got[2:], []error{errors.New("e3")}, []time.Time{retryAt}); err != nil || states[got[2].ID] != queue.StateAvailable {
			t.Fatalf("FailManyAt = %v, %v", states, err)
		}
		for i, j := range got {
			stored, _ := q.Get(ctx, j.ID)
			want := []string{fmt.Sprint("e", i+1)}
			if diff := cmp.Diff(want, stored.Errors); diff != "" {
				t.Errorf("job %d errors (-want +got):\n%s", i, diff)
			}
			failedAt(t, stored, stored.Attempt)
			if i < 2 {
				if d := time.Until(stored.RunAfter); d < delays[i]-5*time.Second || d > delays[i]+5*time.Second {
					t.Errorf("job %d retried in %v, want %v", i, d, delays[i])
				}
			} else if !stored.RunAfter.Equal(retryAt) {
				t.Errorf("job %d retried at %v, want %v", i, stored.RunAfter, retryAt)
			}
		}
		// Attempt 2 of 2: dead.
		got, err = q.Claim(ctx, "n", 10, queue.ClaimAt(time.Now().Add(4*time.Hour)))
		if err != nil || len(got) != 3 {
			t.Fatalf("second claim = %d, %v", len(got), err)
		}
		states, err = q.FailMany(ctx, got, []error{errors.New("f1"), errors.New("f2"), errors.New("f3")})
		if err != nil || len(states) != 3 {
			t.Fatalf("FailMany = %v, %v", states, err)
		}
		for id, s := range states {
			if s != queue.StateDead {
				t.Errorf("job %d is %q after its last attempt failed, want dead", id, s)
			}
		}
		if states, _ := q.FailMany(ctx, got, []error{nil, nil, nil}); len(states) != 0 {
			t.Errorf("stale FailMany changed %v", states)
		}
	})
}

// TestLeaseNowait: a transaction holding a job's row makes a NOWAIT claim
// fail at once rather than wait or pass over it.
func TestLeaseNowait(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.nowait
		res, err := q.Push(ctx, task("x"))
		if err != nil {
			t.Fatal(err)
		}
		tx, err := e.db.SQL.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			t.Fatal(err)
		}
		forUpdate, args := "SELECT id FROM nowait_queue FOR UPDATE", []any(nil)
		if e.name == dbtest.Citus { // Citus locks rows of one shard only: the job's bucket names it
			forUpdate, args = "SELECT id FROM nowait_queue WHERE bucket = $1 AND id = $2 FOR UPDATE", []any{res.ID % spec.MaxBuckets, res.ID}
		}
		if _, err := tx.ExecContext(ctx, e.sql(forUpdate, forUpdate, "SELECT id FROM nowait_queue WITH (UPDLOCK, ROWLOCK)"), args...); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := q.Claim(ctx, "n", 1); err == nil {
			t.Errorf("NOWAIT claim of a locked row succeeded")
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("NOWAIT claim took %v", d)
		}
		tx.Rollback()
		got, err := q.Claim(ctx, "n", 1)
		if err != nil || len(got) != 1 || got[0].Payload.Name != "x" {
			t.Fatalf("claim = %v, %v", got, err)
		}
	})
}

// TestUndecodablePayloadIsDiscarded: a JSON payload edited to the wrong
// shape makes that job dead with the error, and the claim goes on.
func TestUndecodablePayloadIsDiscarded(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		bad, _ := q.Push(ctx, task("x"))
		good, _ := q.Push(ctx, task("y"))
		e.exec(t, `UPDATE task_queue SET payload = '{"name": 42}' WHERE id = ?`, bad.ID)
		got, err := q.Claim(ctx, "n", 10)
		if err != nil || len(got) != 1 || got[0].ID != good.ID {
			t.Fatalf("claim = %v, %v; want only the good job", got, err)
		}
		dead, err := q.Get(ctx, bad.ID)
		if err == nil {
			t.Errorf("Get of the undecodable job decoded it: %+v", dead)
		}
		if n := e.count(t, "SELECT count(*) FROM task_queue WHERE id = ? AND state = 'dead' AND attempt = 1", bad.ID); n != 1 {
			t.Errorf("the undecodable job is not dead after its attempt")
		}
	})
}

// TestUndecodablePayloadWhoseDiscardFails: when the discard of an
// undecodable job fails (here a trigger refuses it), the claim still
// returns every job it decoded, with the error, and the worker works
// them: the slots they took are neither lost nor held. Not on Citus, which
// refuses the trigger that makes the discard fail (no triggers on a
// distributed table).
func TestUndecodablePayloadWhoseDiscardFails(t *testing.T) {
	eachEngineOf(t, withoutCitus(), func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		first, _ := q.Push(ctx, task("first"))
		bad, _ := q.Push(ctx, task("bad"))
		last, _ := q.Push(ctx, task("last"))
		e.exec(t, `UPDATE task_queue SET payload = '{"name": 42}' WHERE id = ?`, bad.ID)
		if e.postgres() {
			e.exec(t, `CREATE FUNCTION refuse_dead() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.state = 'dead' THEN RAISE EXCEPTION 'dead refused'; END IF; RETURN NEW; END $$`)
		}
		e.exec(t, e.sql(
			`CREATE TRIGGER refuse_dead BEFORE UPDATE ON task_queue FOR EACH ROW EXECUTE FUNCTION refuse_dead()`,
			`CREATE TRIGGER refuse_dead BEFORE UPDATE ON task_queue FOR EACH ROW BEGIN IF NEW.state = 'dead' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'dead refused'; END IF; END`,
			`CREATE TRIGGER refuse_dead ON task_queue AFTER UPDATE AS IF EXISTS (SELECT 1 FROM inserted WHERE state = 'dead') THROW 50000, 'dead refused', 1`,
		))
		var handled sync.Map
		w := q.Worker(func(ctx context.Context, job *queue.Job[payload.Task]) error {
			handled.Store(job.ID, true)
			return nil
		}, queue.Concurrency(3), queue.PollInterval(50*time.Millisecond), queue.Logger(quiet))
		stop := runWorker(t, w)
		eventually(t, 30*time.Second, "the two decodable jobs handled", func() bool {
			_, a := handled.Load(first.ID)
			_, b := handled.Load(last.ID)
			return a && b
		})
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if n := e.count(t, "SELECT count(*) FROM task_queue WHERE id = ? AND state = 'running'", bad.ID); n != 1 {
			t.Errorf("the job whose discard failed is not left claimed (its lease runs out, then it is claimed again)")
		}
	})
}

// TestClaimInCallersTransactionDatesItsLeaseNow: a claim made in a
// caller's transaction (WithTx) dates its lease from when the claim ran,
// not from when the transaction began: a lease of 1s taken 1.5s into a
// transaction is not over before it commits. With now() (the
// transaction's start) it was, and another node could take the job while
// this one ran it.
func TestClaimInCallersTransactionDatesItsLeaseNow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewTaskQueue(db)
	if _, err := q.Push(ctx, payload.Task{Name: "late"}); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)                              //nolint:errcheck
	if _, err := tx.Exec(ctx, "SELECT 1"); err != nil { // the transaction has begun
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	before := time.Now()
	got, err := q.WithTx(tx).Claim(ctx, "node", 1, queue.LeaseFor(time.Second))
	if err != nil || len(got) != 1 {
		t.Fatalf("claim in tx = %d jobs, %v", len(got), err)
	}
	if until := got[0].LockedUntil; until == nil || until.Before(before.Add(900*time.Millisecond)) {
		t.Errorf("a 1s lease claimed at %v runs until %v: dated from the transaction's start", before.Format("15:04:05.000"), until)
	}
}
