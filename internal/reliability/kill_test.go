package reliability_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// workerBuild is workerproc built once for the test process, into
// workerDir (removed by TestMain).
var (
	workerOnce sync.Once
	workerDir  string
	workerBin  string
	workerErr  error
)

// buildWorker builds cmd workerproc, once for every test that needs it.
func buildWorker(t *testing.T) string {
	t.Helper()
	workerOnce.Do(func() {
		if workerDir, workerErr = os.MkdirTemp("", "reliability-workerproc-"); workerErr != nil {
			return
		}
		bin := filepath.Join(workerDir, "workerproc")
		if out, err := exec.Command("go", "build", "-o", bin, "./workerproc").CombinedOutput(); err != nil {
			workerErr = fmt.Errorf("go build workerproc: %v\n%s", err, out)
			return
		}
		workerBin = bin
	})
	if workerErr != nil {
		t.Fatal(workerErr)
	}
	return workerBin
}

// TestWorkersKilled works thousands of jobs with three worker processes
// while the test kills one with SIGKILL at random moments and starts it
// again. Afterwards every job is completed, none twice, and every job
// handled more than once was first handled by a process that was killed.
// On every engine.
func TestWorkersKilled(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		tg := prepare(t, engine, "")
		bin := buildWorker(t)
		total := scale(3000, 30000)
		chaos := time.Duration(scale(4, 40)) * time.Second

		ps := make([]work, total)
		for i := range ps {
			ps[i] = work{N: int64(i), Kind: "ok"}
		}
		if err := tg.work.pushMany(context.Background(), ps); err != nil {
			t.Fatal(err)
		}

		type proc struct {
			cmd      *exec.Cmd
			instance string
		}
		incarnation := 0
		start := func(slot int) *proc {
			incarnation++
			p := &proc{instance: fmt.Sprintf("slot%d-%d", slot, incarnation)}
			p.cmd = exec.Command(bin, "-db", tg.address, "-node", fmt.Sprintf("slot%d", slot), "-instance", p.instance)
			p.cmd.Stderr = os.Stderr
			stdout, err := p.cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := p.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait for its signal handler, so that SIGTERM means a graceful stop.
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil || line != "ready\n" {
				t.Fatalf("worker %s did not start: %q, %v", p.instance, line, err)
			}
			return p
		}
		procs := []*proc{start(0), start(1), start(2)}
		killed := map[string]bool{}
		for end := time.Now().Add(chaos); time.Now().Before(end); {
			time.Sleep(time.Duration(150+rand.IntN(350)) * time.Millisecond)
			slot := rand.IntN(len(procs))
			procs[slot].cmd.Process.Signal(syscall.SIGKILL)
			procs[slot].cmd.Wait()
			killed[procs[slot].instance] = true
			procs[slot] = start(slot) // same node id: it releases what it held
		}
		waitFinished(t, tg, "work_queue", 2*time.Minute)
		for _, p := range procs {
			p.cmd.Process.Signal(syscall.SIGTERM)
			if err := p.cmd.Wait(); err != nil {
				t.Errorf("a worker did not shut down cleanly: %v", err)
			}
		}

		// Every re-delivery follows a delivery to a killed process.
		redelivered := 0
		for _, instance := range tg.column(t, `SELECT h.instance FROM handled h
WHERE EXISTS (SELECT 1 FROM handled later WHERE later.job_id = h.job_id AND later.attempt > h.attempt)`) {
			redelivered++
			if !killed[instance] {
				t.Errorf("a job was handled again after instance %s, which was not killed, handled it", instance)
			}
		}
		check(t, tg, "sigkill", tally(t, tg, "work_queue", total), atLeastOnce,
			fmt.Sprintf("%d kills", len(killed)), fmt.Sprintf("%d re-deliveries", redelivered))
		if len(killed) == 0 {
			t.Error("no worker was killed")
		}
	})
}
