package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/queuegen/queuegen/queue"
)

// age moves the finish of the jobs ids back by d (whole hours).
func (e *engine) age(t *testing.T, table string, d time.Duration, ids ...int64) {
	t.Helper()
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = fmt.Sprint(id)
	}
	hours := int(d.Hours())
	e.exec(t, fmt.Sprintf(e.sql("UPDATE %s SET finished_at = now() - interval '%d hours' WHERE id IN (%s)",
		"UPDATE %s SET finished_at = UTC_TIMESTAMP(6) - INTERVAL %d HOUR WHERE id IN (%s)",
		"UPDATE %s SET finished_at = DATEADD(hour, -%d, SYSUTCDATETIME()) WHERE id IN (%s)"), table, hours, strings.Join(list, ", ")))
}

// TestMaintainerRetention: finished jobs past their retention are
// deleted, and only those; a queue without retention keeps everything.
func TestMaintainerRetention(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		kept := e.kept // retention: succeeded 1h, dead 2h
		for i := range 7 {
			if _, err := kept.Push(ctx, task(fmt.Sprint(i)), queue.MaxAttempts(1)); err != nil {
				t.Fatal(err)
			}
		}
		got, err := kept.Claim(ctx, "n", 10)
		if err != nil || len(got) != 7 {
			t.Fatalf("claim = %d, %v", len(got), err)
		}
		kept.CompleteMany(ctx, got[:5])
		kept.FailMany(ctx, got[5:], []error{errors.New("x"), errors.New("y")}) // dead: one attempt
		// Age them: 0-2 succeeded 2 hours ago (past 1h), 3-4 just now; one
		// dead job 3 hours ago (past 2h), one 1 hour ago.
		e.age(t, "kept_queue", 2*time.Hour, got[0].ID, got[1].ID, got[2].ID)
		e.age(t, "kept_queue", 3*time.Hour, got[5].ID)
		e.age(t, "kept_queue", time.Hour, got[6].ID)

		res, _ := e.task.Push(ctx, task("kept"), queue.MaxAttempts(1))
		j, _ := e.task.Claim(ctx, "n", 1)
		e.task.Discard(ctx, j[0], errors.New("old and dead"))
		e.age(t, "task_queue", 1000*time.Hour, res.ID)

		m := queue.NewMaintainer([]queue.Maintained{kept, e.task}, queue.PurgeBatch(2, 100), queue.MaintainerLogger(quiet))
		rep, err := m.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []queue.MaintenanceReport{{Queue: "kept", Purged: 4}, {Queue: "task"}}
		if diff := cmp.Diff(want, rep); diff != "" {
			t.Errorf("report (-want +got):\n%s", diff)
		}
		for i, j := range got {
			_, err := kept.Get(ctx, j.ID)
			if gone := errors.Is(err, e.noRows); gone != (i < 3 || i == 5) {
				t.Errorf("job %d: Get = %v after maintenance", i, err)
			}
		}
		if _, err := e.task.Get(ctx, res.ID); err != nil {
			t.Errorf("a queue without retention lost a dead job: %v", err)
		}
	})
}

// holdMaintenanceLock takes queue's maintenance lock as another node's
// batch would, until release is called.
func (e *engine) holdMaintenanceLock(t *testing.T, name, table string) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := e.db.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var locked bool
	if e.postgres() {
		err = tx.QueryRowContext(ctx, "SELECT pg_try_advisory_xact_lock(hashtextextended('queuegen maintenance ' || $1, 0))", table).Scan(&locked)
	} else { // the queue's registry row
		var got string
		forUpdate := "SELECT name FROM queuegen_queues WHERE name = ? FOR UPDATE"
		lock := e.sql(forUpdate, forUpdate, "SELECT name FROM queuegen_queues WITH (UPDLOCK, ROWLOCK) WHERE name = ?")
		err = tx.QueryRowContext(ctx, e.placeholders(lock), name).Scan(&got)
		locked = got == name
	}
	if err != nil || !locked {
		tx.Rollback()
		t.Fatalf("could not take the maintenance lock: %v", err)
	}
	return func() { tx.Commit() }
}

// TestMaintainerOneNodeAtATime: while another node's batch holds a
// queue's maintenance lock (taken for its transaction), a maintainer's
// batch does nothing; once it ends, the work is done. The lock never
// outlives a transaction.
func TestMaintainerOneNodeAtATime(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		q := e.task
		q.Push(ctx, task("x"), queue.MaxAttempts(1))
		q.Claim(ctx, "dead-node", 1)
		e.exec(t, e.sql("UPDATE task_queue SET locked_until = now() - interval '1 minute'",
			"UPDATE task_queue SET locked_until = UTC_TIMESTAMP(6) - INTERVAL 1 MINUTE",
			"UPDATE task_queue SET locked_until = DATEADD(minute, -1, SYSUTCDATETIME())"))

		release := e.holdMaintenanceLock(t, "task", "task_queue")
		m := queue.NewMaintainer([]queue.Maintained{q}, queue.MaintainerLogger(quiet))
		rep, err := m.RunOnce(ctx)
		if err != nil || rep[0].Reaped != 0 {
			release()
			t.Fatalf("with the lock held elsewhere: %+v, %v; want nothing done", rep, err)
		}
		release()
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
	})
}
