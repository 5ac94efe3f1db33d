package e2e_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuegen/queuegen/integration/e2e/payload"
	"github.com/queuegen/queuegen/queue"
)

func TestTransactionRollbackReturnsJob(t *testing.T) {
	eachTx(t, txRollbackReturnsJob[pgx.Tx], txRollbackReturnsJob[*sql.Tx])
}

func txRollbackReturnsJob[Tx any](t *testing.T, e *engine, x *txEngine[Tx]) {
	ctx := context.Background()
	q := x.q
	res, err := q.Push(ctx, payload.Task{Name: "r", N: 9})
	if err != nil {
		t.Fatal(err)
	}

	tx1 := x.begin(t)
	got, err := q.Claim(ctx, tx1, 5)
	if err != nil || len(got) != 1 || got[0].ID != res.ID || got[0].Attempt != 1 || got[0].Payload.N != 9 {
		t.Fatalf("claim in tx = %+v, %v", got, err)
	}
	// Another transaction skips the locked row.
	tx2 := x.begin(t)
	if other, err := q.Claim(ctx, tx2, 5); err != nil || len(other) != 0 {
		t.Fatalf("second claimer got %+v, %v; want nothing (SKIP LOCKED)", other, err)
	}
	x.driver.Rollback(ctx, tx2)
	// Rollback returns the job, attempt and all.
	if err := x.driver.Rollback(ctx, tx1); err != nil {
		t.Fatal(err)
	}
	back, _ := q.Get(ctx, res.ID)
	if back.State != queue.StateAvailable || back.Attempt != 0 {
		t.Fatalf("after rollback: %+v; want available at attempt 0", back)
	}

	tx3 := x.begin(t)
	got, err = q.Claim(ctx, tx3, 5)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim after rollback = %v, %v", got, err)
	}
	if err := q.Complete(ctx, tx3, got[0]); err != nil {
		t.Fatal(err)
	}
	if err := x.driver.Commit(ctx, tx3); err != nil {
		t.Fatal(err)
	}
	done, _ := q.Get(ctx, res.ID)
	if done.State != queue.StateSucceeded || done.Attempt != 1 {
		t.Errorf("after commit: %+v; want succeeded", done)
	}
}

func TestTransactionFailDeadAndBatch(t *testing.T) {
	eachTx(t, txFailDeadAndBatch[pgx.Tx], txFailDeadAndBatch[*sql.Tx])
}

func txFailDeadAndBatch[Tx any](t *testing.T, e *engine, x *txEngine[Tx]) {
	ctx := context.Background()
	q := x.q
	for i := range 3 {
		if _, err := q.Push(ctx, task(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	// Attempt 1 of 2 fails for all: retried after backoff.
	tx := x.begin(t)
	got, err := q.Claim(ctx, tx, 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	states, err := q.FailMany(ctx, tx, got, []error{errors.New("a"), errors.New("b"), errors.New("c")})
	if err != nil || len(states) != 3 {
		t.Fatalf("FailMany = %v, %v", states, err)
	}
	for _, s := range states {
		if s != queue.StateAvailable {
			t.Errorf("state after first failure = %q, want available", s)
		}
	}
	if err := x.driver.Commit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	// Attempt 2 of 2: one fails (dead), one completes, one is snoozed.
	tx = x.begin(t)
	got, err = q.Claim(ctx, tx, 10, queue.ClaimAt(time.Now().Add(time.Hour)))
	if err != nil || len(got) != 3 {
		t.Fatalf("second claim = %d, %v", len(got), err)
	}
	if s, err := q.Fail(ctx, tx, got[0], errors.New("again")); err != nil || s != queue.StateDead {
		t.Errorf("Fail on the last attempt = %q, %v; want dead", s, err)
	}
	if n, err := q.CompleteMany(ctx, tx, got[1:2]); err != nil || n != 1 {
		t.Errorf("CompleteMany = %v, %v", n, err)
	}
	if err := q.Snooze(ctx, tx, got[2], time.Now().Add(time.Minute)); err != nil {
		t.Error(err)
	}
	// The fencing still holds inside the transaction.
	if err := q.Complete(ctx, tx, got[0]); !errors.Is(err, queue.ErrNotHeld) {
		t.Errorf("Complete of a dead job = %v, want ErrNotHeld", err)
	}
	if err := x.driver.Commit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	dead, _ := q.Get(ctx, got[0].ID)
	if dead.State != queue.StateDead || len(dead.Errors) != 2 {
		t.Errorf("dead job = %+v; want both errors kept", dead)
	}
	failedAt(t, dead)
	snoozed, _ := q.Get(ctx, got[2].ID)
	if snoozed.State != queue.StateAvailable || snoozed.MaxAttempts != 3 {
		t.Errorf("snoozed job = %+v; want available with max_attempts 3", snoozed)
	}
}

// TestTransactionConcurrentClaims: claimers in concurrent transactions
// each get distinct jobs, and all jobs are worked exactly once.
func TestTransactionConcurrentClaims(t *testing.T) {
	eachTx(t, txConcurrentClaims[pgx.Tx], txConcurrentClaims[*sql.Tx])
}

func txConcurrentClaims[Tx any](t *testing.T, e *engine, x *txEngine[Tx]) {
	ctx := context.Background()
	q := x.q
	const total = 500
	ps := make([]payload.Task, total)
	for i := range ps {
		ps[i] = payload.Task{Name: "invoice", N: i}
	}
	if _, err := q.PushMany(ctx, ps, queue.Priority(1)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				tx, err := x.driver.Begin(ctx, queue.DefaultIsolation)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := q.Claim(ctx, tx, 5)
				if err != nil || len(got) == 0 {
					x.driver.Rollback(ctx, tx)
					if err != nil {
						t.Error(err)
					}
					return
				}
				for _, j := range got {
					if err := q.Complete(ctx, tx, j); err != nil {
						t.Error(err)
					}
				}
				if err := x.driver.Commit(ctx, tx); err != nil {
					t.Error(err)
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
	if len(seen) != total {
		t.Errorf("%d jobs worked, want %d", len(seen), total)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("job %d worked %d times", id, n)
		}
	}
}

// TestPushInCallerTransaction: WithTx pushes as part of the caller's
// transaction, so a rollback un-pushes.
func TestPushInCallerTransaction(t *testing.T) {
	eachTx(t, txPushInCallerTransaction[pgx.Tx], txPushInCallerTransaction[*sql.Tx])
}

func txPushInCallerTransaction[Tx any](t *testing.T, e *engine, x *txEngine[Tx]) {
	ctx := context.Background()
	tx := x.begin(t)
	res, err := x.pushIn(ctx, tx, task("tx"))
	if err != nil {
		t.Fatal(err)
	}
	other := x.begin(t)
	if got, _ := x.q.Claim(ctx, other, 1); len(got) != 0 {
		t.Errorf("an uncommitted push was claimable")
	}
	x.driver.Rollback(ctx, other)
	x.driver.Rollback(ctx, tx)
	if _, err := x.q.Get(ctx, res.ID); !errors.Is(err, e.noRows) {
		t.Errorf("after rollback Get = %v, want no rows", err)
	}
}
