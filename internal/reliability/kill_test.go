package reliability_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/queuegen/queuegen/internal/reliability/jobs"
)

// buildWorker builds cmd workerproc into a temp dir.
func buildWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "workerproc")
	if out, err := exec.Command("go", "build", "-o", bin, "./workerproc").CombinedOutput(); err != nil {
		t.Fatalf("go build workerproc: %v\n%s", err, out)
	}
	return bin
}

// TestWorkersKilled works thousands of jobs with three worker processes
// while the test kills one with SIGKILL at random moments and starts it
// again. Afterwards every job is completed, none twice, and every job
// handled more than once was first handled by a process that was killed.
func TestWorkersKilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, pool := prepare(t, "")
	bin := buildWorker(t)
	total := scale(3000, 30000)
	chaos := time.Duration(scale(4, 40)) * time.Second

	q := jobs.NewWorkQueue(pool)
	ps := make([]jobs.WorkPayload, total)
	for i := range ps {
		ps[i] = jobs.WorkPayload{N: int64(i), Kind: "ok"}
	}
	if _, err := q.PushMany(ctx, ps); err != nil {
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
		p.cmd = exec.Command(bin, "-db", url, "-node", fmt.Sprintf("slot%d", slot), "-instance", p.instance)
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
	waitFinished(t, pool, "work_queue", 2*time.Minute)
	for _, p := range procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("a worker did not shut down cleanly: %v", err)
		}
	}

	c := tally(t, pool, "work_queue", total)
	check(t, "sigkill", c, atLeastOnce)
	// Every re-delivery follows a delivery to a killed process.
	rows, err := pool.Query(ctx, `SELECT h.instance FROM handled h
WHERE EXISTS (SELECT 1 FROM handled later WHERE later.job_id = h.job_id AND later.attempt > h.attempt)`)
	if err != nil {
		t.Fatal(err)
	}
	redelivered := 0
	for rows.Next() {
		var instance string
		rows.Scan(&instance)
		redelivered++
		if !killed[instance] {
			t.Errorf("a job was handled again after instance %s, which was not killed, handled it", instance)
		}
	}
	t.Logf("%d kills, %d re-deliveries", len(killed), redelivered)
	if len(killed) == 0 {
		t.Error("no worker was killed")
	}
}
