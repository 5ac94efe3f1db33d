package reliability_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queuegen/queuegen/integration/reliability/jobs"
	"github.com/queuegen/queuegen/integration/reliability/mysql/myjobs"
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

// workerProc is one running workerproc.
type workerProc struct {
	cmd      *exec.Cmd
	instance string
}

// workerProcs starts and kills workerprocs of one scenario; each start is
// a new incarnation, named apart from the others in table handled.
type workerProcs struct {
	t           *testing.T
	bin, db     string
	args        []string // after -db, -node and -instance
	incarnation int
}

// start starts a workerproc as node and waits until it is ready.
func (w *workerProcs) start(node string) *workerProc {
	w.t.Helper()
	w.incarnation++
	p := &workerProc{instance: fmt.Sprintf("%s-%d", node, w.incarnation)}
	p.cmd = exec.Command(w.bin, append([]string{"-db", w.db, "-node", node, "-instance", p.instance}, w.args...)...)
	p.cmd.Stderr = os.Stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	// Wait for its signal handler, so that SIGTERM means a graceful stop.
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		w.t.Fatalf("worker %s did not start: %q, %v", p.instance, line, err)
	}
	return p
}

// kill kills p with SIGKILL and reaps it.
func (p *workerProc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
}

// stop shuts the workers down gracefully, failing the test for any that
// does not.
func (w *workerProcs) stop(ps []*workerProc) {
	for _, p := range ps {
		p.cmd.Process.Signal(syscall.SIGTERM)
		if err := p.cmd.Wait(); err != nil {
			w.t.Errorf("a worker did not shut down cleanly: %v", err)
		}
	}
}

// redeliveries counts the jobs of table handled again after a run that
// returned success, failing the test for each whose earlier run was not
// by a killed instance.
func redeliveries(t *testing.T, tg *target, table string, killed map[string]bool) int {
	t.Helper()
	n := 0
	for _, instance := range tg.column(t, `SELECT h.instance FROM handled h
WHERE h.queue = ? AND EXISTS (SELECT 1 FROM handled later WHERE later.queue = h.queue AND later.job_id = h.job_id AND later.attempt > h.attempt)`, table) {
		n++
		if !killed[instance] {
			t.Errorf("a job was handled again after instance %s, which was not killed, handled it", instance)
		}
	}
	return n
}

// TestWorkersKilled works thousands of jobs with three worker processes
// while the test kills one with SIGKILL at random moments and starts it
// again. Afterwards every job is completed, none twice, and every job
// handled more than once was first handled by a process that was killed.
// On every engine.
func TestWorkersKilled(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		tg := prepare(t, engine, "")
		total := scale(3000, 30000)
		chaos := time.Duration(scale(4, 40)) * time.Second

		ps := make([]work, total)
		for i := range ps {
			ps[i] = work{N: int64(i), Kind: "ok"}
		}
		if err := tg.work.pushMany(context.Background(), ps); err != nil {
			t.Fatal(err)
		}
		w := &workerProcs{t: t, bin: buildWorker(t), db: tg.address}
		procs := []*workerProc{w.start("slot0"), w.start("slot1"), w.start("slot2")}
		killed := map[string]bool{}
		for end := time.Now().Add(chaos); time.Now().Before(end); {
			time.Sleep(time.Duration(150+rand.IntN(350)) * time.Millisecond)
			slot := rand.IntN(len(procs))
			procs[slot].kill()
			killed[procs[slot].instance] = true
			procs[slot] = w.start(fmt.Sprint("slot", slot)) // same node id: it releases what it held
		}
		waitFinished(t, tg, "work_queue", 2*time.Minute)
		w.stop(procs)
		redelivered := redeliveries(t, tg, "work_queue", killed)
		check(t, tg, "sigkill", tally(t, tg, "work_queue", total), atLeastOnce,
			fmt.Sprintf("%d kills", len(killed)), fmt.Sprintf("%d re-deliveries", redelivered))
		if len(killed) == 0 {
			t.Error("no worker was killed")
		}
	})
}

// TestLimitedWorkersKilled works queue limited (per_key 2, global 6) with
// three worker processes of 8 handlers each, its jobs spread over ten
// tenants with one tenant's tail last (so that each limit binds in turn),
// while the test kills one with
// SIGKILL at random moments, and a separate connection samples the leased
// jobs every 2 ms. A killed process comes back under its own node id
// half the time (releasing its slots at once) and under a new one
// otherwise (its slots come back as its leases expire, 2 s). Afterwards
// every job is completed, none twice, no sample saw the limits exceeded,
// and every re-delivery followed a kill. On every engine with limits
// (PostgreSQL and MySQL).
func TestLimitedWorkersKilled(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		tg := prepare(t, engine, "")
		ctx := context.Background()
		total := scale(1500, 15000)
		chaos := time.Duration(scale(4, 40)) * time.Second
		// Ten tenants share most jobs, and t0 has a tenth of them more: while
		// every tenant has jobs due, the global limit binds (six slots for
		// ten tenants); once only t0's are left, per_key does (two slots of
		// six).
		tenant := func(i int) string {
			if i >= total*9/10 {
				return "t0"
			}
			return fmt.Sprint("t", i%10)
		}
		var err error
		if engine == postgres {
			ps := make([]jobs.LimitedPayload, total)
			for i := range ps {
				ps[i] = jobs.LimitedPayload{N: int64(i), Tenant: tenant(i)}
			}
			_, err = jobs.NewLimitedQueue(tg.pool).PushMany(ctx, ps)
		} else {
			ps := make([]myjobs.LimitedPayload, total)
			for i := range ps {
				ps[i] = myjobs.LimitedPayload{N: int64(i), Tenant: tenant(i)}
			}
			_, err = myjobs.NewLimitedQueue(tg.db).PushMany(ctx, ps)
		}
		if err != nil {
			t.Fatal(err)
		}

		// Sample the leased jobs, per tenant and in all, until the end, on
		// a connection of the sampler's own.
		sampleCtx, stopSampling := context.WithCancel(ctx)
		var maxPerKey, maxGlobal, samples int
		sampled := make(chan struct{})
		const sample = `SELECT COALESCE(MAX(n), 0), COALESCE(SUM(n), 0)
FROM (SELECT COUNT(*) AS n FROM limited_queue WHERE state = 'running' GROUP BY tenant) AS per`
		go func() {
			defer close(sampled)
			for sampleCtx.Err() == nil {
				var perKey, global int64
				var err error
				if engine == postgres {
					err = tg.pool.QueryRow(sampleCtx, sample).Scan(&perKey, &global)
				} else {
					err = sampleUnderClaimLock(sampleCtx, tg.db, sample, &perKey, &global)
				}
				if err == nil {
					maxPerKey, maxGlobal, samples = max(maxPerKey, int(perKey)), max(maxGlobal, int(global)), samples+1
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()

		w := &workerProcs{t: t, bin: buildWorker(t), db: tg.address, args: []string{"-queue", "limited"}}
		procs, killed, renamed := w.chaos(3, chaos)
		waitFinished(t, tg, "limited_queue", 2*time.Minute)
		stopSampling()
		<-sampled
		w.stop(procs)
		redelivered := redeliveries(t, tg, "limited_queue", killed)
		check(t, tg, "sigkill within limits", tally(t, tg, "limited_queue", total), atLeastOnce,
			fmt.Sprintf("%d kills (%d restarted as a new node)", len(killed), renamed), fmt.Sprintf("%d re-deliveries", redelivered),
			fmt.Sprintf("%d samples: at most %d leased per tenant and %d in all (limits 2 and 6)", samples, maxPerKey, maxGlobal))
		if maxPerKey > 2 || maxGlobal > 6 {
			t.Errorf("sampled %d leased jobs of one tenant and %d in all; the limits are 2 and 6", maxPerKey, maxGlobal)
		}
		if maxPerKey < 2 || maxGlobal < 6 {
			t.Errorf("no sample saw a limit reached (at most %d leased per tenant and %d in all, limits 2 and 6): the scenario does not test them", maxPerKey, maxGlobal)
		}
		if len(killed) == 0 || samples == 0 {
			t.Errorf("%d workers killed, %d samples taken", len(killed), samples)
		}
	})
}

// sampleUnderClaimLock runs query, a sample of queue limited's leased jobs,
// on MariaDB under the queue's claim lock (its registry row, as
// LockClaimsLimited takes it), in a READ COMMITTED transaction of its own.
// InnoDB's read view is not an atomic snapshot (the active transactions'
// ids are copied in a lock-free walk), so a plain sample taken while
// claims and completions commit can see a claim's leases but not the
// completion whose slot it took, and count past the limits; under the
// claim lock no lease commits during the walk. integration/e2e's
// runningRows tells the whole story.
func sampleUnderClaimLock(ctx context.Context, db *sql.DB, query string, dest ...any) error {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // read only
	var name string
	if err := tx.QueryRowContext(ctx, "SELECT name FROM queuegen_queues WHERE name = 'limited' FOR UPDATE").Scan(&name); err != nil {
		return err
	}
	return tx.QueryRowContext(ctx, query).Scan(dest...)
}

// chaos starts n worker processes and, for d, SIGKILLs one at random
// every 150–500 ms and starts another in its slot, under the slot's node
// id (it releases its predecessor's jobs at start) or, half the time, a
// new one (whose predecessor's jobs come back as their leases expire). It
// returns the processes running at the end, the instances killed and how
// many restarts took a new node id.
func (w *workerProcs) chaos(n int, d time.Duration) (procs []*workerProc, killed map[string]bool, renamed int) {
	for i := range n {
		procs = append(procs, w.start(fmt.Sprint("slot", i)))
	}
	killed = map[string]bool{}
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(time.Duration(150+rand.IntN(350)) * time.Millisecond)
		slot := rand.IntN(len(procs))
		procs[slot].kill()
		killed[procs[slot].instance] = true
		node := fmt.Sprint("slot", slot)
		if rand.IntN(2) == 0 {
			node = fmt.Sprintf("slot%d-%d", slot, w.incarnation)
			renamed++
		}
		procs[slot] = w.start(node)
	}
	return procs, killed, renamed
}

// TestBackloggedWorkersKilled: jobs pushed to a queue with a backlog
// (batch 50, 10 tenants) are drained by three worker processes, each
// claim that comes up short running a scheduler step, while the test
// SIGKILLs one at random, in a claim, a step or a handler. A step is one
// transaction, so a kill inside it leaves its jobs in the backlog.
// Afterwards every job is completed, none twice, both tables are empty,
// and every re-delivery followed a kill. On every engine with backlogs
// (PostgreSQL, where the backlog inherits from the queue table, and
// MySQL, where the step copies and deletes between two tables).
func TestBackloggedWorkersKilled(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		tg := prepare(t, engine, "")
		ctx := context.Background()
		total := scale(1500, 15000)
		var err error
		if engine == postgres {
			ps := make([]jobs.BackloggedPayload, total)
			for i := range ps {
				ps[i] = jobs.BackloggedPayload{N: int64(i), Tenant: fmt.Sprint("t", i%10)}
			}
			_, err = jobs.NewBackloggedQueue(tg.pool).PushMany(ctx, ps)
		} else {
			ps := make([]myjobs.BackloggedPayload, total)
			for i := range ps {
				ps[i] = myjobs.BackloggedPayload{N: int64(i), Tenant: fmt.Sprint("t", i%10)}
			}
			_, err = myjobs.NewBackloggedQueue(tg.db).PushMany(ctx, ps)
		}
		if err != nil {
			t.Fatal(err)
		}
		w := &workerProcs{t: t, bin: buildWorker(t), db: tg.address, args: []string{"-queue", "backlogged"}}
		procs, killed, renamed := w.chaos(3, time.Duration(scale(4, 40))*time.Second)
		// Jobs move only from the backlog to the queue table: once the
		// backlog is done, what is left is in the queue table.
		waitFinished(t, tg, "backlogged_queue_backlog", 2*time.Minute)
		waitFinished(t, tg, "backlogged_queue", 2*time.Minute)
		w.stop(procs)
		redelivered := redeliveries(t, tg, "backlogged_queue", killed)
		check(t, tg, "sigkill with a backlog", tally(t, tg, "backlogged_queue", total), atLeastOnce,
			fmt.Sprintf("%d kills (%d restarted as a new node)", len(killed), renamed), fmt.Sprintf("%d re-deliveries", redelivered))
		if n := tg.count(t, "SELECT count(*) FROM backlogged_queue_backlog"); n != 0 {
			t.Errorf("%d jobs left in the backlog", n)
		}
		if len(killed) == 0 {
			t.Error("no worker was killed")
		}
	})
}
