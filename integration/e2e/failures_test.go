package e2e_test

import (
	"testing"
	"time"

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
