package e2e_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/queuegen/queuegen/internal/e2e/jobs"
	"github.com/queuegen/queuegen/queue"
)

// TestMaintainerRetention: finished jobs past their retention are
// deleted, and only those; a queue without retention keeps everything.
func TestMaintainerRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	reports := jobs.NewReportQueue(db) // retention: succeeded 7d, dead 30d
	emails := jobs.NewEmailQueue(db)   // no retention
	for i := range 7 {
		if _, err := reports.Push(ctx, jobs.ReportPayload{ReportID: int64(i)}, queue.MaxAttempts(1)); err != nil {
			t.Fatal(err)
		}
	}
	tx := begin(t, db)
	got, err := reports.Claim(ctx, tx, 10)
	if err != nil || len(got) != 7 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	reports.CompleteMany(ctx, tx, got[:5])
	reports.FailMany(ctx, tx, got[5:], []error{errors.New("x"), errors.New("y")}) // dead: one attempt
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Age them: ids 0-2 succeeded 8 days ago (past 7d), 3-4 just now; one
	// dead job 31 days ago (past 30d), one 10 days ago.
	ids := func(js []*queue.Job[jobs.ReportPayload]) []int64 {
		var out []int64
		for _, j := range js {
			out = append(out, j.ID)
		}
		return out
	}
	db.Exec(ctx, "UPDATE report_queue SET finished_at = now() - interval '8 days' WHERE id = ANY($1)", ids(got[:3]))
	db.Exec(ctx, "UPDATE report_queue SET finished_at = now() - interval '31 days' WHERE id = $1", got[5].ID)
	db.Exec(ctx, "UPDATE report_queue SET finished_at = now() - interval '10 days' WHERE id = $1", got[6].ID)

	res, _ := emails.Push(ctx, jobs.EmailPayload{Recipient: "kept"}, queue.MaxAttempts(1))
	e, _ := emails.Claim(ctx, "n", 1)
	emails.Discard(ctx, e[0], errors.New("old and dead"))
	db.Exec(ctx, "UPDATE email_queue SET finished_at = now() - interval '1000 days' WHERE id = $1", res.ID)

	m := queue.NewMaintainer([]queue.Maintained{reports, emails}, queue.PurgeBatch(2, 100), queue.MaintainerLogger(quiet))
	rep, err := m.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []queue.MaintenanceReport{{Queue: "report", Purged: 4}, {Queue: "email"}}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	left := map[int64]bool{}
	rows, _ := db.Query(ctx, "SELECT id FROM report_queue")
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		left[id] = true
	}
	if len(left) != 3 || !left[got[3].ID] || !left[got[4].ID] || !left[got[6].ID] {
		t.Errorf("left %v; want the two recent successes and the recent dead job", left)
	}
	if _, err := emails.Get(ctx, res.ID); err != nil {
		t.Errorf("a queue without retention lost a dead job: %v", err)
	}
}

// TestMaintainerOneNodeAtATime: while another node's batch holds a
// queue's maintenance lock (taken for its statement's transaction), a
// maintainer's batch does nothing; once it ends, the work is done. The lock
// never outlives a transaction.
func TestMaintainerOneNodeAtATime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	emails := jobs.NewEmailQueue(db)
	emails.Push(ctx, jobs.EmailPayload{Recipient: "x"}, queue.MaxAttempts(1))
	emails.Claim(ctx, "dead-node", 1)
	db.Exec(ctx, "UPDATE email_queue SET locked_until = now() - interval '1 minute'")

	other, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	var locked bool
	other.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock(hashtextextended('queuegen maintenance email_queue', 0))").Scan(&locked)
	if !locked {
		t.Fatal("could not take the lock")
	}
	m := queue.NewMaintainer([]queue.Maintained{emails}, queue.MaintainerLogger(quiet))
	rep, err := m.RunOnce(ctx)
	if err != nil || rep[0].Reaped != 0 {
		t.Fatalf("with the lock held elsewhere: %+v, %v; want nothing done", rep, err)
	}
	other.Commit(ctx)
	rep, err = m.RunOnce(ctx)
	if err != nil || rep[0].Reaped != 1 {
		t.Fatalf("after the lock is freed: %+v, %v; want the expired last attempt reaped", rep, err)
	}
	// Maintenance runs alongside; it stops with its context.
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- m.Run(runCtx) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
