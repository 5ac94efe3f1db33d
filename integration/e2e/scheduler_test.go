package e2e_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuegen/queuegen/queue"
)

// TestPeriodicTickPushedOnce: ten callers racing to push each of three
// ticks, in turn, push each exactly once. (The recorded tick is a
// watermark: a tick older than one already pushed is never pushed late.)
func TestPeriodicTickPushedOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		job := e.periodic[1].PeriodicJobs()[0] // the every-second tick
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
		if n := e.count(t, "SELECT count(*) FROM "+e.tickTable); n != 3 {
			t.Errorf("%d jobs, want 3", n)
		}
		// An old tick is not pushed again.
		if ok, err := job.Push(ctx, base); ok || err != nil {
			t.Errorf("re-pushing the first tick = %t, %v", ok, err)
		}
		var id int64
		if err := e.db.SQL.QueryRow("SELECT min(id) FROM " + e.tickTable).Scan(&id); err != nil {
			t.Fatal(err)
		}
		var get func(context.Context, int64) (string, error)
		switch {
		case e.tickGet != nil:
			get = e.tickGet
		case e.pg != nil:
			get = func(ctx context.Context, id int64) (string, error) {
				j, err := e.pg.q.Get(ctx, id)
				return j.Payload.Name, err
			}
		default:
			get = func(ctx context.Context, id int64) (string, error) {
				j, err := e.std.q.Get(ctx, id)
				return j.Payload.Name, err
			}
		}
		if name, err := get(ctx, id); err != nil || name != "tick" {
			t.Errorf("periodic payload name = %q, %v; want the spec's tick", name, err)
		}
	})
}

// TestSchedulersOnThreeNodes: three schedulers of an every-second job,
// running together, push one job per tick.
func TestSchedulersOnThreeNodes(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 3 {
			s := queue.NewScheduler(e.periodic[1].PeriodicJobs(), quiet)
			wg.Go(func() { s.Run(ctx) })
		}
		eventually(t, 30*time.Second, "three ticks", func() bool { return e.count(t, "SELECT count(*) FROM "+e.tickTable) >= 3 })
		cancel()
		wg.Wait()
		second := e.sql("date_trunc('second', created_at)", "DATE_FORMAT(created_at, '%Y%m%d%H%i%s')", "CONVERT(CHAR(19), created_at, 120)")
		if n := e.count(t, "SELECT count(*) FROM (SELECT "+second+" AS s FROM "+e.tickTable+" GROUP BY "+second+" HAVING count(*) > 1) d"); n != 0 {
			t.Errorf("%d ticks were pushed more than once", n)
		}
		if n := e.count(t, "SELECT count(*) FROM "+e.tickTable); n != e.count(t, "SELECT count(DISTINCT "+second+") FROM "+e.tickTable) {
			t.Errorf("%d jobs for fewer ticks", n)
		}
	})
}
