package reliability_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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

// redelivered is what redeliveries counted: the jobs handled again after
// a run that returned success, those whose earlier run was by a killed
// instance, and those whose earlier run's instance, not killed, saw its
// lease run out itself first (the lapses it logged: see workerproc's
// leases), by where it saw it.
type redelivered struct {
	total, afterKill int
	afterLapse       map[string]int
}

// String is r for a scenario's line: the re-deliveries after a lapse are
// named apart, so a run whose workers were starved of CPU past their
// leases says so.
func (r redelivered) String() string {
	s := fmt.Sprintf("%d re-deliveries", r.total)
	if n := r.total - r.afterKill; n > 0 {
		whys := slices.Sorted(maps.Keys(r.afterLapse))
		var parts []string
		for _, why := range whys {
			parts = append(parts, fmt.Sprintf("%d at %s", r.afterLapse[why], why))
		}
		s += fmt.Sprintf(" (%d after a kill, %d after a lapse of the lease its holder saw itself: %s)", r.afterKill, n, strings.Join(parts, ", "))
	}
	return s
}

// redeliveries counts the jobs of table handled again after a run that
// returned success, failing the test for each whose earlier run was by an
// instance that was neither killed nor saw the job's lease run out before
// it was done with it (table lapsed): a re-delivery of a job whose holder
// still held a live lease, by its own clock.
func redeliveries(t *testing.T, tg *target, table string, killed map[string]bool) redelivered {
	t.Helper()
	r := redelivered{afterLapse: map[string]int{}}
	tg.rows(t, func(scan func(dest ...any) error) error {
		var instance, why string
		var id int64
		var attempt int32
		if err := scan(&instance, &id, &attempt, &why); err != nil {
			return err
		}
		r.total++
		switch {
		case killed[instance]:
			r.afterKill++
		case why != "":
			r.afterLapse[why]++
		default:
			t.Errorf("job %d was handled again after instance %s, which was not killed and saw no lapse of its lease, handled attempt %d", id, instance, attempt)
		}
		return nil
	}, `SELECT h.instance, h.job_id, h.attempt, COALESCE((SELECT l.why FROM lapsed l
    WHERE l.queue = h.queue AND l.job_id = h.job_id AND l.attempt = h.attempt AND l.instance = h.instance ORDER BY l.at LIMIT 1), '')
FROM handled h
WHERE h.queue = ? AND EXISTS (SELECT 1 FROM handled later WHERE later.queue = h.queue AND later.job_id = h.job_id AND later.attempt > h.attempt)`, table)
	return r
}

// TestWorkersKilled works thousands of jobs with three worker processes
// while the test kills one with SIGKILL at random moments and starts it
// again. Afterwards every job is completed, none twice, and every job
// handled more than once was first handled by a process that was killed.
// On every engine, and on a Citus cluster (where the triggers of the audit
// log each completion on the node holding the job's shard; see
// citusAudit), with queue work distributed over 64 buckets.
func TestWorkersKilled(t *testing.T) {
	eachEngineAndCitus(t, func(t *testing.T, engine string) {
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
		w := &workerProcs{t: t, bin: buildWorker(t), db: tg.address, args: tg.workerArgs()}
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
		again := redeliveries(t, tg, "work_queue", killed)
		check(t, tg, "sigkill", tally(t, tg, "work_queue", total), atLeastOnce,
			fmt.Sprintf("%d kills", len(killed)), again.String())
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
		// Ten tenants share most jobs, and t0 has a tenth of them more: while
		// every tenant has jobs due, the global limit binds (six slots for
		// ten tenants); once only t0's are left, per_key does (two slots of
		// six).
		ps := make([]keyed, total)
		for i := range ps {
			ps[i] = keyed{N: int64(i), Tenant: fmt.Sprint("t", i%10)}
			if i >= total*9/10 {
				ps[i].Tenant = "t0"
			}
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

		run := drainKilled(t, tg, "limited", ps)
		stopSampling()
		<-sampled
		check(t, tg, "sigkill within limits", tally(t, tg, "limited_queue", total), atLeastOnce,
			append(run.detail(), fmt.Sprintf("%d samples: at most %d leased per tenant and %d in all (limits 2 and 6)", samples, maxPerKey, maxGlobal))...)
		if maxPerKey > 2 || maxGlobal > 6 {
			t.Errorf("sampled %d leased jobs of one tenant and %d in all; the limits are 2 and 6", maxPerKey, maxGlobal)
		}
		if maxPerKey < 2 || maxGlobal < 6 {
			t.Errorf("no sample saw a limit reached (at most %d leased per tenant and %d in all, limits 2 and 6): the scenario does not test them", maxPerKey, maxGlobal)
		}
		if samples == 0 {
			t.Error("no sample taken")
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
		total := scale(1500, 15000)
		ps := make([]keyed, total)
		for i := range ps {
			ps[i] = keyed{N: int64(i), Tenant: fmt.Sprint("t", i%10)}
		}
		// Jobs move only from the backlog to the queue table: once the
		// backlog is done, what is left is in the queue table.
		run := drainKilled(t, tg, "backlogged", ps, "backlogged_queue_backlog", "backlogged_queue")
		check(t, tg, "sigkill with a backlog", tally(t, tg, "backlogged_queue", total), atLeastOnce, run.detail()...)
		if n := tg.count(t, "SELECT count(*) FROM backlogged_queue_backlog"); n != 0 {
			t.Errorf("%d jobs left in the backlog", n)
		}
	})
}

// killedRun is what a SIGKILL scenario did to its workers: the instances
// it killed, how many restarts took a new node id, and how many jobs were
// handled again after a run that returned success.
type killedRun struct {
	killed      map[string]bool
	renamed     int
	redelivered redelivered
}

// detail is r for the scenario's line.
func (r killedRun) detail() []string {
	return []string{fmt.Sprintf("%d kills (%d restarted as a new node)", len(r.killed), r.renamed), r.redelivered.String()}
}

// drainKilled is the SIGKILL scenarios' run, on any engine and any queue
// of payload keyed: it pushes ps (if any) to queue name and works it with three
// workerprocs while chaos kills one at random and starts another (see
// chaos), waits until tables (the queue's table if none are given, in
// order) hold no unfinished job, stops the workers, and counts the
// re-deliveries, failing the test for any that did not follow a kill, and
// if no worker was killed.
func drainKilled(t *testing.T, tg *target, name string, ps []keyed, tables ...string) killedRun {
	t.Helper()
	return drainKilledWith(t, tg, name, nil, ps, tables...)
}

// drainKilledWith is drainKilled with more arguments for the workerprocs
// (after -queue name).
func drainKilledWith(t *testing.T, tg *target, name string, args []string, ps []keyed, tables ...string) killedRun {
	t.Helper()
	if len(ps) > 0 {
		if err := tg.keyed[name].pushMany(context.Background(), ps); err != nil {
			t.Fatal(err)
		}
	}
	w := &workerProcs{t: t, bin: buildWorker(t), db: tg.address, args: slices.Concat([]string{"-queue", name}, args, tg.workerArgs())}
	procs, killed, renamed := w.chaos(3, time.Duration(scale(4, 40))*time.Second)
	if len(tables) == 0 {
		tables = []string{name + "_queue"}
	}
	for _, table := range tables {
		waitFinished(t, tg, table, 2*time.Minute)
	}
	w.stop(procs)
	if len(killed) == 0 {
		t.Error("no worker was killed")
	}
	return killedRun{killed: killed, renamed: renamed, redelivered: redeliveries(t, tg, name+"_queue", killed)}
}

// claim is one claim of a tenant's jobs, from table claimed: its time,
// the jobs it took, and how many of those were due (the others were taken
// from a holder whose lease had run out).
type claim struct {
	at        time.Time
	jobs, due int
}

// claims are the claims of the jobs of table, per tenant, in the order
// they ran (their times: each claim reads the database's clock under the
// queue's claim lock), and how many jobs were claimed from a holder whose
// lease had run out.
func claims(t *testing.T, tg *target, table string) (map[string][]claim, int) {
	t.Helper()
	byTenant, expired := map[string][]claim{}, 0
	tg.rows(t, func(scan func(dest ...any) error) error {
		var tenant string
		var at time.Time
		var n, due int
		if err := scan(&tenant, &at, &n, &due); err != nil {
			return err
		}
		byTenant[tenant] = append(byTenant[tenant], claim{at: at, jobs: n, due: due})
		expired += n - due
		return nil
	}, `SELECT tenant, at, count(*), sum(CASE WHEN expired THEN 0 ELSE 1 END) FROM claimed WHERE queue = ?
GROUP BY tenant, at ORDER BY tenant, at`, table)
	return byTenant, expired
}

// TestFairWorkersKilled: a big tenant's jobs are pushed to queue fair
// (fair_by tenant, no limits) first and nine small tenants' after, and
// three worker processes drain them while the test SIGKILLs one at
// random. Afterwards every job is completed, none twice, every
// re-delivery followed a kill, and the small tenants were served in turn
// with the big one: when the last small tenant's job was first claimed, no
// more than half the big tenant's jobs had been (in claim order, by the
// database's clock: no bound on speed). It would catch a fair claim that
// loses or repeats jobs when its claimer dies (a kill inside its
// statement, or a restart releasing a dead incarnation's jobs), and one
// that serves tenants in push order, leaving the small tenants behind the
// big one. On every engine.
func TestFairWorkersKilled(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		tg := prepare(t, engine, "")
		big, small, each := scale(1200, 12000), 9, scale(20, 200)
		var ps []keyed
		for range big {
			ps = append(ps, keyed{N: int64(len(ps)), Tenant: "big"})
		}
		for i := range small * each {
			ps = append(ps, keyed{N: int64(len(ps)), Tenant: fmt.Sprint("small", i%small)})
		}
		run := drainKilled(t, tg, "fair", ps)
		// Each job's first claim, in claim order: how many of the big
		// tenant's came before the last small tenant's.
		var last time.Time
		var bigFirst []time.Time
		tg.rows(t, func(scan func(dest ...any) error) error {
			var tenant string
			var at time.Time
			if err := scan(&tenant, &at); err != nil {
				return err
			}
			if tenant == "big" {
				bigFirst = append(bigFirst, at)
			} else if at.After(last) {
				last = at
			}
			return nil
		}, "SELECT tenant, min(at) FROM claimed WHERE queue = 'fair_queue' GROUP BY job_id, tenant")
		before := 0
		for _, at := range bigFirst {
			if at.Before(last) {
				before++
			}
		}
		_, expired := claims(t, tg, "fair_queue")
		check(t, tg, "sigkill with fair claims", tally(t, tg, "fair_queue", len(ps)), atLeastOnce,
			append(run.detail(), fmt.Sprintf("%d jobs claimed after their holder's lease ran out", expired),
				fmt.Sprintf("%d of the big tenant's %d jobs claimed before the last of %d small tenants' %d", before, big, small, small*each))...)
		if len(bigFirst) != big {
			t.Errorf("%d of the big tenant's %d jobs claimed", len(bigFirst), big)
		}
		if before > big/2 {
			t.Errorf("%d of the big tenant's %d jobs were claimed before the last of the small tenants' (pushed after them): the claims did not take each tenant in turn", before, big)
		}
	})
}

// TestRatedWorkersKilled: jobs of five tenants pushed to queue rated
// (at most 10 jobs of a tenant claimed per second) are drained by three
// worker processes while the test SIGKILLs one at random, so that claims
// are cut short inside their transaction and jobs come back when their
// holder's lease expires (its handlers take up to 300 ms, so that kills
// catch jobs held). Every claim of a job is logged, with its
// tenant and time, by a trigger (claimed): a claim's due jobs of a
// tenant, with the tenant's jobs claimed in the second before it, are
// never more than 10 (a job taken from a holder whose lease ran out is
// counted in the window but not held back by it, as the generated claim
// documents, so a claim of such jobs alone may take the window past the
// rate), so over the whole run no tenant's due claims outpace the rate;
// and the rate was reached. Every job is completed, none twice,
// every re-delivery followed a kill. It would catch a claim that counts
// the window outside the claim lock or before waiting for it (two claims
// taking the same room), a rate log that loses rows in the window (a prune
// of too much, a log written outside the claim's transaction, so a claim
// killed after it still counts or one killed before it does not), a
// window of the wrong length, claim times that do not follow the claims'
// order, and claims that lose or repeat jobs when their claimer dies. On
// every engine.
func TestRatedWorkersKilled(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		const limit, per = 10, time.Second
		tg := prepare(t, engine, "")
		tenants, each := 5, scale(80, 800)
		ps := make([]keyed, tenants*each)
		for i := range ps {
			ps[i] = keyed{N: int64(i), Tenant: fmt.Sprint("t", i%tenants)}
		}
		// Handlers take up to 300 ms, so that a kill catches jobs held,
		// which come back as the leases of a node restarted under a new id
		// expire.
		run := drainKilledWith(t, tg, "rated", []string{"-work", "300ms"}, ps)
		byTenant, expired := claims(t, tg, "rated_queue")
		most, mostAll, over := 0, 0, 0
		for tenant, cs := range byTenant {
			due := 0
			for i, c := range cs {
				before := 0
				for j := i - 1; j >= 0 && cs[j].at.After(c.at.Add(-per)); j-- {
					before += cs[j].jobs
				}
				mostAll = max(mostAll, before+c.jobs)
				if c.due == 0 {
					// Jobs taken from expired leases only, which the
					// rate does not hold back (though the window past
					// the rate already).
					continue
				}
				if before+c.due > limit {
					over++
					if over <= 5 {
						t.Errorf("tenant %s: a claim at %s took %d due jobs with %d claimed in the second before it; the rate is %d a second",
							tenant, c.at.Format(time.RFC3339Nano), c.due, before, limit)
					}
				}
				most = max(most, before+c.due)
				due += c.due
			}
			// Over the whole run, from its first claim to its last.
			if span := cs[len(cs)-1].at.Sub(cs[0].at) + per; float64(due) > limit*span.Seconds() {
				t.Errorf("tenant %s: %d due jobs claimed within %s; the rate is %d a second", tenant, due, span, limit)
			}
		}
		check(t, tg, "sigkill with a rate", tally(t, tg, "rated_queue", len(ps)), atLeastOnce,
			append(run.detail(), fmt.Sprintf("%d jobs claimed after their holder's lease ran out", expired),
				fmt.Sprintf("at most %d of a tenant's jobs claimed in the second up to a claim of due jobs (rate %d a second; %d counting those taken from expired leases)", most, limit, mostAll))...)
		if len(byTenant) != tenants {
			t.Errorf("claims of %d tenants logged, want %d", len(byTenant), tenants)
		}
		if most < limit {
			t.Errorf("no tenant's claims reached the rate (at most %d in a second, rate %d): the scenario does not test it", most, limit)
		}
	})
}

// TestArchivedWorkersKilled: jobs of queue archived (on_success: archive)
// are drained by three worker processes while the test SIGKILLs one at
// random, in a claim, a handler or a completion's move, and a separate
// connection counts the jobs of the queue's table and of its archive, in
// one statement, every 2 ms. Every sample counts each job once (never in
// both tables nor in neither); afterwards the queue's table is empty and
// the archive holds every job exactly once, succeeded; every job is
// completed, none twice, every re-delivery followed a kill. It would catch
// a move that deletes without copying or copies without deleting (or not
// in one transaction, so a kill between the two leaves a job in both or
// neither), a completion that archives a job twice (a retried or
// unfenced move), and claims that lose or repeat jobs when their claimer
// dies. On every engine.
func TestArchivedWorkersKilled(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		tg := prepare(t, engine, "")
		total := scale(1500, 15000)
		ps := make([]keyed, total)
		for i := range ps {
			ps[i] = keyed{N: int64(i), Tenant: fmt.Sprint("t", i%10)}
		}
		// From the first push to the last completion, each job is in one
		// of the two tables.
		sampleCtx, stopSampling := context.WithCancel(context.Background())
		var samples, bad, badCount int
		sampled := make(chan struct{})
		pushed := make(chan struct{})
		go func() {
			defer close(sampled)
			<-pushed
			for sampleCtx.Err() == nil {
				n, err := tg.queryInt(sampleCtx, "SELECT (SELECT count(*) FROM archived_queue) + (SELECT count(*) FROM archived_queue_archive)")
				if err == nil {
					samples++
					if n != total {
						bad, badCount = bad+1, n
					}
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
		if err := tg.keyed["archived"].pushMany(context.Background(), ps); err != nil {
			t.Fatal(err)
		}
		close(pushed)
		run := drainKilled(t, tg, "archived", nil)
		stopSampling()
		<-sampled
		archived := tg.count(t, "SELECT count(*) FROM archived_queue_archive")
		distinct := tg.count(t, "SELECT count(DISTINCT n) FROM archived_queue_archive WHERE state = 'succeeded' AND finished_at IS NOT NULL")
		queued := tg.count(t, "SELECT count(*) FROM archived_queue")
		check(t, tg, "sigkill with an archive", tally(t, tg, "archived_queue", total), atLeastOnce,
			append(run.detail(), fmt.Sprintf("%d samples of both tables, %d not counting each job once", samples, bad),
				fmt.Sprintf("%d archived (%d jobs), %d left in the queue's table", archived, distinct, queued))...)
		if bad != 0 {
			t.Errorf("%d of %d samples counted other than %d jobs in the queue's table and the archive (one counted %d): a job in both or in neither", bad, samples, total, badCount)
		}
		if archived != total || distinct != total || queued != 0 {
			t.Errorf("the archive holds %d rows of %d distinct succeeded jobs and the queue's table %d; want %d, %d and 0", archived, distinct, queued, total, total)
		}
		if samples == 0 {
			t.Error("no sample taken")
		}
	})
}
