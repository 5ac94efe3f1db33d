package e2e_test

import (
	"context"
	"testing"

	"github.com/queuegen/queuegen/internal/e2e/jobs"
)

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
