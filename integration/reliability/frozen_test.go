package reliability_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// TestWorkersFrozen works queue work (2 s leases) with three worker
// processes (handlers of up to 100 ms, so that the drain outlasts the
// freezes) while the test freezes one at a time with SIGSTOP for 5 s, once
// it holds jobs, past the lease by more than the others' poll interval,
// and thaws it with SIGCONT: a process starved of CPU on a
// loaded machine, but every time and for certain. The others take the
// frozen one's jobs as its leases run out, and the frozen one, thawed,
// finds it was too late: each of its handlers that returns, each
// heartbeat and each completion it sends past a job's lease, by its own
// clock, logs a lapse (workerproc's leases). Afterwards every job is
// completed, none twice, jobs were handled again after a lapse their
// holder saw (else the scenario did not test the path), and none was
// handled again after a holder that neither was killed nor saw its lease
// lapse: it would catch workerproc's lapses going unlogged, whose
// re-deliveries would fail TestWorkersKilled and its kin on a loaded
// machine as if the runtime had re-delivered a live lease, and a check
// loose enough to let such a re-delivery through. On every engine.
func TestWorkersFrozen(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		tg := prepare(t, engine, "")
		total := scale(2000, 20000)
		ps := make([]work, total)
		for i := range ps {
			ps[i] = work{N: int64(i), Kind: "ok"}
		}
		if err := tg.work.pushMany(context.Background(), ps); err != nil {
			t.Fatal(err)
		}
		w := &workerProcs{t: t, bin: buildWorker(t), db: tg.address, args: append(tg.workerArgs(), "-work", "100ms")}
		nodes := []string{"slot0", "slot1", "slot2"}
		procs := []*workerProc{w.start(nodes[0]), w.start(nodes[1]), w.start(nodes[2])}
		// Past the 2 s lease by more than the others' poll interval (1 s),
		// so that they claim the frozen one's jobs again before it thaws.
		const stall = 5 * time.Second
		freezes := 0
		for i := range 2 {
			// Freeze a process that holds jobs: one frozen between claims
			// would leave nothing to take again.
			for deadline := time.Now().Add(30 * time.Second); tg.count(t, `SELECT count(*) FROM work_queue WHERE locked_by = ? AND state = 'running'`, nodes[i]) == 0; {
				if time.Now().After(deadline) {
					t.Fatalf("worker %s held no job for 30 s", nodes[i])
				}
				time.Sleep(10 * time.Millisecond)
			}
			p := procs[i]
			if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.cmd.Process.Signal(syscall.SIGCONT) }) // never left frozen

			time.Sleep(stall)
			if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			freezes++
		}
		waitFinished(t, tg, "work_queue", 2*time.Minute)
		w.stop(procs)
		again := redeliveries(t, tg, "work_queue", map[string]bool{})
		check(t, tg, "frozen workers", tally(t, tg, "work_queue", total), atLeastOnce,
			fmt.Sprintf("%d freezes of %s", freezes, stall), again.String())
		if again.total == 0 || len(again.afterLapse) == 0 {
			t.Errorf("no job was handled again after a lapse its holder saw (%d re-deliveries): the freezes did not test the path", again.total)
		}
	})
}
