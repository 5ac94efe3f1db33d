package jobs

// Written by hand, not generated: a benchmark of the generated row → Job
// mapping, the CPU part of every claim.

import (
	"testing"
	"time"

	"github.com/queuegen/queuegen/internal/bench/jobs/jobsdb"
)

func BenchmarkRowToJob(b *testing.B) {
	q := NewBenchQueue(nil)
	now := time.Now()
	node := "node-1"
	row := jobsdb.BenchRow{ID: 1, State: "running", Attempt: 1, MaxAttempts: 25, RunAfter: now, CreatedAt: now,
		AttemptedAt: &now, LockedBy: &node, LockedUntil: &now, Errors: []string{}, Recipient: "a@example.com", N: 7}
	b.ReportAllocs()
	for b.Loop() {
		if job := q.job(row); job.ID != 1 {
			b.Fatal(job.ID)
		}
	}
}
