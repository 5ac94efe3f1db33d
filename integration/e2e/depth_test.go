package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/integration/e2e/payload"
	"github.com/queuegen/queuegen/queue"
)

// TestDepthAtMost, on every engine: DepthAtMost counts the due jobs as
// Depth does (not the scheduled ones, not the running ones) and stops at
// its limit; a limit below 1 is an error.
func TestDepthAtMost(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		batch := make([]payload.Task, 5)
		for i := range batch {
			batch[i] = payload.Task{Name: "due", N: i}
		}
		if _, err := q.PushMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Push(ctx, payload.Task{Name: "later"}, queue.RunAfter(time.Now().Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		if got, err := q.Claim(ctx, "node", 1); err != nil || len(got) != 1 {
			t.Fatalf("claim = %d, %v", len(got), err)
		}
		for limit, want := range map[int]int64{1: 1, 3: 3, 4: 4, 100: 4} {
			if n, err := q.DepthAtMost(ctx, limit); err != nil || n != want {
				t.Errorf("DepthAtMost(%d) = %d, %v; want %d", limit, n, err, want)
			}
		}
		if n, err := q.Depth(ctx); err != nil || n != 4 {
			t.Errorf("Depth = %d, %v; want 4", n, err)
		}
		if _, err := q.DepthAtMost(ctx, 0); err == nil || !strings.Contains(err.Error(), "DepthAtMost(0): the limit must be at least 1") {
			t.Errorf("DepthAtMost(0) = %v", err)
		}
	})
}

// TestDepthLeavesOutHeldJobs (PostgreSQL): a job claimed in a transaction
// still open is not counted as due by Depth, though other sessions still
// see its row as available; once the transaction ends it counts again.
// (MySQL shows no other session's row locks to a plain read: there, Depth
// counts such jobs, as its query's comment says.)
func TestDepthLeavesOutHeldJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewReportQueue(db)
	for _, id := range []int64{1, 2} {
		if _, err := q.Push(ctx, jobs.ReportPayload{ReportID: id}); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := q.Claim(ctx, tx, 1); err != nil || len(got) != 1 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	if n, err := q.Depth(ctx); err != nil || n != 1 {
		t.Errorf("Depth with one job held = %d, %v; want 1", n, err)
	}
	tx.Rollback(ctx)
	if n, err := q.Depth(ctx); err != nil || n != 2 {
		t.Errorf("Depth after the rollback = %d, %v; want 2", n, err)
	}
}
