package e2e_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/internal/e2e/jobs"
	"github.com/queuegen/queuegen/queue"
)

func begin(t *testing.T, db *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := db.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	return tx
}

func TestTransactionRollbackReturnsJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewReportQueue(db)
	res, err := q.Push(ctx, jobs.ReportPayload{ReportID: 9, RequestedAt: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		t.Fatal(err)
	}

	tx1 := begin(t, db)
	got, err := q.Claim(ctx, tx1, 5)
	if err != nil || len(got) != 1 || got[0].ID != res.ID || got[0].Attempt != 1 || got[0].Payload.ReportID != 9 {
		t.Fatalf("claim in tx = %+v, %v", got, err)
	}
	// Another transaction skips the locked row.
	tx2 := begin(t, db)
	if other, err := q.Claim(ctx, tx2, 5); err != nil || len(other) != 0 {
		t.Fatalf("second claimer got %+v, %v; want nothing (SKIP LOCKED)", other, err)
	}
	tx2.Rollback(ctx)
	// Rollback returns the job, attempt and all.
	if err := tx1.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	back, _ := q.Get(ctx, res.ID)
	if back.State != queue.StateAvailable || back.Attempt != 0 {
		t.Fatalf("after rollback: %+v; want available at attempt 0", back)
	}

	tx3 := begin(t, db)
	got, err = q.Claim(ctx, tx3, 5)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim after rollback = %v, %v", got, err)
	}
	if err := q.Complete(ctx, tx3, got[0]); err != nil {
		t.Fatal(err)
	}
	if err := tx3.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	done, _ := q.Get(ctx, res.ID)
	if done.State != queue.StateSucceeded || done.Attempt != 1 {
		t.Errorf("after commit: %+v; want succeeded", done)
	}
}

func TestTransactionFailDeadAndBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewReportQueue(db)
	for i := range 3 {
		if _, err := q.Push(ctx, jobs.ReportPayload{ReportID: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Attempt 1 of 2 fails for all: retried after backoff.
	tx := begin(t, db)
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
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Attempt 2 of 2: one fails (dead), one completes, one is snoozed.
	tx = begin(t, db)
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
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	dead, _ := q.Get(ctx, got[0].ID)
	if dead.State != queue.StateDead || len(dead.Errors) != 2 {
		t.Errorf("dead job = %+v; want both errors kept", dead)
	}
	snoozed, _ := q.Get(ctx, got[2].ID)
	if snoozed.State != queue.StateAvailable || snoozed.MaxAttempts != 3 {
		t.Errorf("snoozed job = %+v; want available with max_attempts 3", snoozed)
	}
}

// TestTransactionConcurrentClaims: claimers in concurrent transactions
// each get distinct jobs, and all jobs are worked exactly once.
func TestTransactionConcurrentClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewInvoiceQueue(db)
	const total = 500
	ps := make([]jobs.InvoicePayload, total)
	for i := range ps {
		var n pgtype.Numeric
		if err := n.Scan("12.50"); err != nil {
			t.Fatal(err)
		}
		ps[i] = jobs.InvoicePayload{InvoiceID: int64(i), Amount: n}
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
				tx, err := db.Begin(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := q.Claim(ctx, tx, 5)
				if err != nil || len(got) == 0 {
					tx.Rollback(ctx)
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
				if err := tx.Commit(ctx); err != nil {
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
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewEmailQueue(db)
	tx := begin(t, db)
	res, err := q.WithTx(tx).Push(ctx, jobs.EmailPayload{Recipient: "tx"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := q.Claim(ctx, "n", 1); len(got) != 0 {
		t.Errorf("an uncommitted push was claimable")
	}
	tx.Rollback(ctx)
	if _, err := q.Get(ctx, res.ID); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("after rollback Get = %v, want no rows", err)
	}
}
