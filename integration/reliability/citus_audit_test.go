//go:build citus

package reliability_test

import (
	"context"
	"testing"

	"github.com/queuegen/queuegen/internal/dbtest"
)

// TestCitusAudit checks the Citus audit itself (citusAudit): jobs of
// queue work completed through the accessor, on both worker nodes' shards,
// and deleted by hand, are each logged once as completed, with their
// attempt, and those without a handler run counted as completed unhandled;
// so the scenarios' counts on Citus see what happens on every node. It
// would catch an audit that misses a node's shards (a trigger not on every
// shard, a node's log not gathered) or gathers a log twice.
func TestCitusAudit(t *testing.T) {
	eachEngineOf(t, dbtest.AndCitus(nil), func(t *testing.T, engine string) {
		tg := prepare(t, engine, "")
		ctx := context.Background()
		pushWork(t, tg, 200)
		claimed, err := tg.work.claim(ctx, "audit", 40)
		if err != nil || len(claimed) != 40 {
			t.Fatalf("claimed %d of 40: %v", len(claimed), err)
		}
		if n, err := tg.work.completeMany(ctx, claimed[:30]); err != nil || n != 30 {
			t.Fatalf("completed %d of 30: %v", n, err)
		}
		for _, j := range claimed[30:] {
			record(ctx, tg, "work_queue", j.ID, j.Attempt, "audit")
			if err := tg.work.complete(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		if err := tg.exec(ctx, "DELETE FROM work_queue WHERE state = 'available' AND id IN (SELECT id FROM work_queue WHERE state = 'available' ORDER BY id LIMIT 5)"); err != nil {
			t.Fatal(err)
		}
		c := tally(t, tg, "work_queue", 200)
		c.collectTwice(t, tg)
		if c.completed != 45 || c.double != 0 || c.unhandled != 35 || c.left != 155 {
			t.Errorf("the audit counted %d completed (want 45), %d twice (0), %d unhandled (35), %d left (155)", c.completed, c.double, c.unhandled, c.left)
		}
		if n := tg.count(t, "SELECT count(*) FROM completed_log WHERE attempt = 1"); n != 40 {
			t.Errorf("%d completions logged at attempt 1, want 40", n)
		}
		nodes := tg.count(t, `SELECT count(*) FROM run_command_on_workers('SELECT count(*) FROM '
    || quote_ident(current_schema()) || '.completed_here') WHERE success AND result::int > 0`)
		if nodes < 2 {
			t.Errorf("completions logged on %d worker nodes; the jobs' buckets are on every node", nodes)
		}
	})
}

// collectTwice gathers the audit again and requires the same counts: a
// gathering replaces the coordinator's copy, it does not add to it.
func (c counts) collectTwice(t *testing.T, tg *target) {
	t.Helper()
	if again := tally(t, tg, "work_queue", c.pushed); again != c {
		t.Errorf("the audit gathered again counts %+v, first %+v", again, c)
	}
}
