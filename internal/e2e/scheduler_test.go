package e2e_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuegen/queuegen/internal/e2e/jobs"
	"github.com/queuegen/queuegen/queue"
)

// TestPeriodicTickPushedOnce: ten callers racing to push each of three
// ticks, in turn, push each exactly once. (The recorded tick is a
// watermark: a tick older than one already pushed is never pushed late.)
func TestPeriodicTickPushedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	job := jobs.NewReportQueue(db).PeriodicJobs()[0]
	base := time.Now().Truncate(time.Second)
	var pushed atomic.Int64
	for tick := range 3 {
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				ok, err := job.Push(ctx, base.Add(time.Duration(tick)*time.Second))
				if err != nil {
					t.Error(err)
				}
				if ok {
					pushed.Add(1)
				}
			})
		}
		wg.Wait()
	}
	if pushed.Load() != 3 {
		t.Errorf("%d pushes reported, want one per tick (3)", pushed.Load())
	}
	if n := count(t, db, "SELECT count(*) FROM report_queue"); n != 3 {
		t.Errorf("%d jobs, want 3", n)
	}
	// An old tick is not pushed again.
	if ok, err := job.Push(ctx, base); ok || err != nil {
		t.Errorf("re-pushing the first tick = %t, %v", ok, err)
	}
	var got struct {
		ReportID int64
		Format   *string
	}
	j, _ := jobs.NewReportQueue(db).Claim(ctx, begin(t, db), 1)
	got.ReportID, got.Format = j[0].Payload.ReportID, j[0].Payload.Format
	if got.ReportID != 0 || got.Format == nil || *got.Format != "pdf" {
		t.Errorf("periodic payload = %+v, want the spec's {report_id: 0, format: pdf}", got)
	}
}

// TestSchedulersOnThreeNodes: three schedulers of an every-second job,
// running together, push one job per tick.
func TestSchedulersOnThreeNodes(t *testing.T) {
	t.Parallel()
	db := migrated(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 3 {
		s := queue.NewScheduler(jobs.NewReportQueue(db).PeriodicJobs(), quiet)
		wg.Go(func() { s.Run(ctx) })
	}
	eventually(t, 30*time.Second, "three ticks", func() bool { return count(t, db, "SELECT count(*) FROM report_queue") >= 3 })
	cancel()
	wg.Wait()
	if n := count(t, db, "SELECT count(*) FROM (SELECT date_trunc('second', created_at) FROM report_queue GROUP BY 1 HAVING count(*) > 1) d"); n != 0 {
		t.Errorf("%d ticks were pushed more than once", n)
	}
	if n := count(t, db, "SELECT count(*) FROM report_queue"); n != count(t, db, "SELECT count(DISTINCT date_trunc('second', created_at)) FROM report_queue") {
		t.Errorf("%d jobs for fewer ticks", n)
	}
}
