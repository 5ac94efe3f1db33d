package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/queuegen/queuegen/internal/e2e/jobs"
	"github.com/queuegen/queuegen/internal/e2e/payload"
	"github.com/queuegen/queuegen/queue"
)

func ptr[T any](v T) *T { return &v }

func TestLeasePushClaimComplete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := jobs.NewEmailQueue(migrated(t))

	res, err := q.Push(ctx, jobs.EmailPayload{Recipient: "a@example.com", Subject: ptr("hi"), TenantID: ptr(int64(7))})
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
	want := jobs.EmailPayload{Recipient: "a@example.com", Subject: ptr("hi"), TenantID: ptr(int64(7))}
	if diff := cmp.Diff(want, job.Payload); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
	if job.ID != res.ID || job.Attempt != 1 || job.MaxAttempts != jobs.EmailMaxAttempts || job.State != queue.StateRunning || job.LockedBy != "node-1" {
		t.Errorf("job = %+v", job)
	}
	if job.LockedUntil == nil || job.LockedUntil.Sub(*job.AttemptedAt) != jobs.EmailLease {
		t.Errorf("lease = %v from %v, want %v", job.LockedUntil, job.AttemptedAt, jobs.EmailLease)
	}
	if more, _ := q.Claim(ctx, "node-2", 10); len(more) != 0 {
		t.Errorf("a leased job was claimed again: %+v", more)
	}
	if err := q.Complete(ctx, job); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Get(ctx, job.ID); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("after Complete (on_success: delete), Get = %v, want no rows", err)
	}
	if err := q.Complete(ctx, job); !errors.Is(err, queue.ErrNotHeld) {
		t.Errorf("second Complete = %v, want ErrNotHeld", err)
	}
}

func TestLeaseClaimOrderPriorityAndRunAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := jobs.NewEmailQueue(migrated(t))
	push := func(name string, opts ...queue.PushOption) {
		if _, err := q.Push(ctx, jobs.EmailPayload{Recipient: name}, opts...); err != nil {
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
	var names []string
	for _, j := range got {
		names = append(names, j.Payload.Recipient)
	}
	// RETURNING has no order; the claim order shows in which jobs are
	// taken when max is smaller, checked below.
	if len(names) != 3 {
		t.Fatalf("claimed %v, want the three due jobs", names)
	}
	for _, j := range got {
		if err := q.Release(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	first, err := q.Claim(ctx, "n", 1)
	if err != nil || len(first) != 1 || first[0].Payload.Recipient != "high" {
		t.Fatalf("Claim(1) = %v, %v; want the priority job", first, err)
	}
	second, err := q.Claim(ctx, "n", 1)
	if err != nil || len(second) != 1 || second[0].Payload.Recipient != "low-1" {
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
}

func TestLeaseExpiredIsReclaimedAndOldHolderFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := jobs.NewEmailQueue(migrated(t))
	if _, err := q.Push(ctx, jobs.EmailPayload{Recipient: "x"}); err != nil {
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
	if err := q.Complete(ctx, fresh[0]); err != nil {
		t.Errorf("the current holder's Complete = %v", err)
	}
}

func TestLeaseFailBackoffAndDead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := jobs.NewEmailQueue(migrated(t))
	res, err := q.Push(ctx, jobs.EmailPayload{Recipient: "x"}, queue.MaxAttempts(2))
	if err != nil {
		t.Fatal(err)
	}
	claim := func(at time.Time) *queue.Job[jobs.EmailPayload] {
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
	if d := after.RunAfter.Sub(time.Now()); d < 0 || d > 2*time.Second {
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
	if got, _ := q.Claim(ctx, "n", 1, queue.ClaimAt(time.Now().Add(time.Hour))); len(got) != 0 {
		t.Errorf("a dead job was claimed")
	}
}

func TestLeaseSnoozeExtendReleaseDiscard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := jobs.NewEmailQueue(migrated(t))
	for i := range 3 {
		if _, err := q.Push(ctx, jobs.EmailPayload{Recipient: fmt.Sprint(i)}); err != nil {
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
}

func TestLeaseReleaseNodeAndReap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewEmailQueue(db)
	for i := range 4 {
		if _, err := q.Push(ctx, jobs.EmailPayload{Recipient: fmt.Sprint(i)}, queue.MaxAttempts(1)); err != nil {
			t.Fatal(err)
		}
	}
	crashed, _ := q.Claim(ctx, "crashed", 2)
	other, _ := q.Claim(ctx, "other", 2, queue.LeaseFor(time.Second))
	if len(crashed) != 2 || len(other) != 2 {
		t.Fatalf("claims = %d, %d", len(crashed), len(other))
	}
	n, err := q.ReleaseNode(ctx, "crashed")
	if err != nil || n != 2 {
		t.Fatalf("ReleaseNode = %d, %v; want 2", n, err)
	}
	// Max attempts 1: the released jobs are due again but the other node's
	// leases, once expired, are on their last attempt: Reap makes them dead.
	if _, err := db.Exec(ctx, "UPDATE email_queue SET locked_until = now() - interval '1 minute' WHERE locked_by = 'other'"); err != nil {
		t.Fatal(err)
	}
	if got, _ := q.Claim(ctx, "n", 10); len(got) != 2 {
		t.Errorf("claim after ReleaseNode got %d jobs, want the 2 released ones (not the expired last attempts)", len(got))
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
	}
}

func TestLeaseUniqueKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := jobs.NewEmailQueue(migrated(t))
	first, err := q.Push(ctx, jobs.EmailPayload{Recipient: "a"}, queue.UniqueKey("welcome:42"))
	if err != nil || first.Duplicate {
		t.Fatalf("first Push = %+v, %v", first, err)
	}
	dup, err := q.Push(ctx, jobs.EmailPayload{Recipient: "a"}, queue.UniqueKey("welcome:42"))
	if err != nil || !dup.Duplicate || dup.ID != 0 {
		t.Fatalf("duplicate Push = %+v, %v; want Duplicate", dup, err)
	}
	if other, err := q.Push(ctx, jobs.EmailPayload{Recipient: "a"}, queue.UniqueKey("welcome:43")); err != nil || other.Duplicate {
		t.Fatalf("other key Push = %+v, %v", other, err)
	}
	// Still held while running; free once finished.
	got, _ := q.Claim(ctx, "n", 1)
	if dup, _ := q.Push(ctx, jobs.EmailPayload{Recipient: "a"}, queue.UniqueKey("welcome:42")); !dup.Duplicate {
		t.Errorf("a running job's key was pushed again")
	}
	if err := q.Complete(ctx, got[0]); err != nil {
		t.Fatal(err)
	}
	if again, err := q.Push(ctx, jobs.EmailPayload{Recipient: "a"}, queue.UniqueKey("welcome:42")); err != nil || again.Duplicate {
		t.Errorf("Push after completion = %+v, %v; want inserted", again, err)
	}
	// Concurrent pushes of one key: exactly one inserts.
	var wg sync.WaitGroup
	inserted := make(chan int64, 20)
	for range 20 {
		wg.Go(func() {
			r, err := q.Push(ctx, jobs.EmailPayload{Recipient: "c"}, queue.UniqueKey("race"))
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
	if _, err := jobs.NewTypedQueue(nil).Push(ctx, jobs.TypedPayload{}, queue.UniqueKey("k")); !errors.Is(err, queue.ErrNoUniqueKey) {
		t.Errorf("UniqueKey on a queue without one = %v, want ErrNoUniqueKey", err)
	}
}

// TestLeaseConcurrentClaimsExactlyOnce: many goroutines claim from one set
// of jobs; every job is claimed exactly once.
func TestLeaseConcurrentClaimsExactlyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewEmailQueue(db)
	const total = 2000
	ps := make([]jobs.EmailPayload, total)
	for i := range ps {
		ps[i] = jobs.EmailPayload{Recipient: fmt.Sprint(i)}
	}
	if n, err := q.PushMany(ctx, ps); err != nil || n != total {
		t.Fatalf("PushMany = %d, %v", n, err)
	}
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
	var left int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM email_queue").Scan(&left); err != nil || left != 0 {
		t.Errorf("%d rows left after completing all, %v", left, err)
	}
}

func TestLeaseBatchFailAndPushManyAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := jobs.NewEmailQueue(migrated(t))
	at := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	if n, err := q.PushMany(ctx, []jobs.EmailPayload{{Recipient: "a"}, {Recipient: "b"}, {Recipient: "c"}}, queue.RunAfter(at), queue.MaxAttempts(1)); err != nil || n != 3 {
		t.Fatalf("PushMany at = %d, %v", n, err)
	}
	if _, err := q.PushMany(ctx, []jobs.EmailPayload{{Recipient: "d"}}, queue.UniqueKey("k")); !errors.Is(err, queue.ErrPushManyOption) {
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
	states, err := q.FailMany(ctx, got, []error{errors.New("e1"), errors.New("e2"), errors.New("e3")})
	if err != nil || len(states) != 3 {
		t.Fatalf("FailMany = %v, %v", states, err)
	}
	for id, s := range states {
		if s != queue.StateDead {
			t.Errorf("job %d is %q after its only attempt failed, want dead", id, s)
		}
	}
	if states, _ := q.FailMany(ctx, got, []error{nil, nil, nil}); len(states) != 0 {
		t.Errorf("stale FailMany changed %v", states)
	}
}

func TestWebhookJSONGoTypeAndNowait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewWebhookQueue(db)
	// The body is already in PostgreSQL's jsonb text form, so it reads back
	// byte for byte.
	want := payload.Webhook{URL: "https://example.com/hook", Body: []byte(`{"a": 1}`)}
	if _, err := q.Push(ctx, want); err != nil {
		t.Fatal(err)
	}
	// A transaction holding the row makes a NOWAIT claim fail at once.
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT id FROM webhook_queue FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Claim(ctx, "n", 1); err == nil {
		t.Errorf("NOWAIT claim of a locked row succeeded")
	}
	tx.Rollback(ctx)
	got, err := q.Claim(ctx, "n", 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim = %v, %v", got, err)
	}
	if diff := cmp.Diff(want, got[0].Payload); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
	if err := q.Complete(ctx, got[0]); err != nil {
		t.Fatal(err)
	}
	kept, _ := q.Get(ctx, got[0].ID)
	if kept.State != queue.StateSucceeded {
		t.Errorf("completed job state = %q, want succeeded (on_success: keep)", kept.State)
	}
}

// TestUndecodablePayloadIsDiscarded: a jsonb payload edited to the wrong
// shape makes that job dead with the error, and the claim goes on.
func TestUndecodablePayloadIsDiscarded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewWebhookQueue(db)
	bad, _ := q.Push(ctx, payload.Webhook{URL: "x"})
	good, _ := q.Push(ctx, payload.Webhook{URL: "y"})
	if _, err := db.Exec(ctx, `UPDATE webhook_queue SET body = '{"url": 42}' WHERE id = $1`, bad.ID); err != nil {
		t.Fatal(err)
	}
	got, err := q.Claim(ctx, "n", 10)
	if err != nil || len(got) != 1 || got[0].ID != good.ID {
		t.Fatalf("claim = %v, %v; want only the good job", got, err)
	}
	var state string
	var errs []string
	if err := db.QueryRow(ctx, "SELECT state, errors FROM webhook_queue WHERE id = $1", bad.ID).Scan(&state, &errs); err != nil {
		t.Fatal(err)
	}
	if state != "dead" || len(errs) != 1 {
		t.Errorf("undecodable job: state %q, errors %q; want dead with the decoding error", state, errs)
	}
}
