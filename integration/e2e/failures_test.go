package e2e_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/queue"
)

// failedAt checks that j's Failures pair each of its errors with a time
// within the last few minutes (the database's clock) and an attempt:
// attempts, where given, one per error; else any attempt from 1 to
// j.Attempt. It catches a statement that appends an error without its
// failure, or with the wrong attempt, and a time no engine's reader takes.
func failedAt[P any](t *testing.T, j *queue.Job[P], attempts ...int32) {
	t.Helper()
	if len(j.Failures) != len(j.Errors) {
		t.Errorf("job %d: %d failures for %d errors", j.ID, len(j.Failures), len(j.Errors))
		return
	}
	for i, f := range j.Failures {
		if f.At.IsZero() || time.Since(f.At) > 5*time.Minute || time.Since(f.At) < -time.Minute {
			t.Errorf("job %d, error %d (%q): recorded at %v, want within the last minutes", j.ID, i, j.Errors[i], f.At)
		}
		want := f.Attempt >= 1 && f.Attempt <= j.Attempt
		if attempts != nil {
			want = i < len(attempts) && f.Attempt == attempts[i]
		}
		if !want {
			t.Errorf("job %d, error %d (%q): attempt %d, want %v (job at attempt %d)", j.ID, i, j.Errors[i], f.Attempt, attempts, j.Attempt)
		}
	}
}

// TestFailuresAfterUpgrade: a database whose jobs were failing before the
// migration that adds the failures column takes it (ADD COLUMN on a table
// with rows, applied by the migration queuegen emitted for the upgrade,
// the last one here), and a job failed before it keeps its error with its
// time unknown while its next failure records both, paired with the right
// error. It catches a migration that does not apply to a live table, and
// a failure statement that mispairs times where errors predate the
// column (NULL failures).
//
// Not on Citus: the failures column predates distribute, so the Citus
// spec has no migration before it to go back to.
func TestFailuresAfterUpgrade(t *testing.T) {
	eachEngineOf(t, withoutCitus(), func(t *testing.T, e *engine) {
		ctx := context.Background()
		m, err := migrate.Open(e.db.Address, migrations[e.name], e2eSchema(e.db)...)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		// Back to before the column: the latest migration adds it.
		if _, err := m.Migrate(ctx, "down", 0); err != nil {
			t.Fatal(err)
		}
		res, err := e.task.Push(ctx, task("old"), queue.MaxAttempts(5))
		if err != nil {
			t.Fatal(err)
		}
		e.exec(t, e.sql(`UPDATE task_queue SET errors = '{"from before the upgrade"}', attempt = 1 WHERE id = $1`,
			`UPDATE task_queue SET errors = JSON_ARRAY('from before the upgrade'), attempt = 1 WHERE id = ?`,
			`UPDATE task_queue SET errors = N'["from before the upgrade"]', attempt = 1 WHERE id = @p1`), res.ID)
		if err := m.Up(ctx, io.Discard); err != nil {
			t.Fatalf("the upgrade's migration: %v", err)
		}
		got, err := e.task.Claim(ctx, "n", 1)
		if err != nil || len(got) != 1 || got[0].ID != res.ID {
			t.Fatalf("claim = %v, %v", got, err)
		}
		if f := got[0].Failures; len(f) != 1 || !f[0].At.IsZero() || f[0].Attempt != 0 || f[0].Error != "from before the upgrade" {
			t.Errorf("claimed job's failures = %+v, want the old error, time unknown", f)
		}
		if _, err := e.task.Fail(ctx, got[0], errors.New("after the upgrade")); err != nil {
			t.Fatal(err)
		}
		job, err := e.task.Get(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		f := job.Failures
		if len(f) != 2 || !f[0].At.IsZero() || f[0].Error != "from before the upgrade" || f[1].Error != "after the upgrade" || f[1].Attempt != 2 ||
			time.Since(f[1].At).Abs() > time.Minute {
			t.Errorf("failures after the upgrade = %+v", f)
		}
	})
}
