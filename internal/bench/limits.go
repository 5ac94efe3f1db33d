package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/queuegen/queuegen/internal/bench/jobs"
	"github.com/queuegen/queuegen/internal/bench/myjobs"
	"github.com/queuegen/queuegen/queue"
)

// Limits is the workload that measures concurrency limits held by the
// database: worker processes drain a queue with limits while another
// connection samples its running jobs. PostgreSQL, MySQL, MariaDB and
// SQL Server; not part of "all".
const Limits = "limits"

// limitsProcs and limitsWork shape the limits workload: 4 worker
// processes of 20 handlers each drain jobs of --tenants tenants (100 by
// default), each job a 20 ms wait (a call to another service), from queue
// bench_limited (per_key: 3, global: 20). The workers write results as a
// worker of a queue with limits does by default, at once: a result held
// back is a slot held back.
const (
	limitsProcs  = 4
	limitsWork   = 20 * time.Millisecond
	limitsPerKey = 3
	limitsGlobal = 20
)

// limitsTarget is a target whose engine has limits: PostgreSQL, MySQL,
// MariaDB and SQL Server.
type limitsTarget interface {
	// address is the bench database's address, for the worker processes
	// (dburl.Parse reads it).
	address() string
	// pushLimited pushes n jobs into bench_limited, job i of tenant(i).
	pushLimited(ctx context.Context, tenant func(i int) string, n int) error
	// limitedRunning samples bench_limited's running jobs: the most of
	// one tenant, and all of them.
	limitedRunning(ctx context.Context) (perKey, global int, err error)
	// limitedLeft counts bench_limited's due jobs and its running ones.
	limitedLeft(ctx context.Context) (left, running int, err error)
}

// childEnv is the environment variable that makes a queuegen process (or
// a test binary) a worker process of the limits workload: it holds the
// child's job, as JSON.
const childEnv = "QUEUEGEN_BENCH_WORKER"

// child is a worker process's job: the queue it works (bench_limited or
// bench_rated), as node, on the database at URL.
type child struct {
	URL   string `json:"url"`
	Node  string `json:"node"`
	Queue string `json:"queue"`
}

// ChildMain runs this process as a worker process of the limits workload
// when its environment says so, and reports whether it did and the exit
// code. The queuegen command and the bench's tests call it first thing:
// the workload starts its worker processes by running its own executable
// again.
func ChildMain() (code int, ran bool) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		return 0, false
	}
	var c child
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, "bench worker:", err)
		return 2, true
	}
	// Stop on SIGTERM, or when the parent goes away (stdin closes).
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	w, closeDB, err := childWorker(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench worker:", err)
		return 1, true
	}
	defer closeDB()
	fmt.Println("ready")
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench worker:", err)
		return 1, true
	}
	return 0, true
}

// childOptions are the options of c's worker: bench_limited's jobs wait
// limitsWork, with as many handlers as the global limit; bench_rated's do
// nothing but their own node's.
func childOptions(c child) (limited, rated []queue.WorkerOption) {
	limited = []queue.WorkerOption{queue.Node(c.Node), queue.Concurrency(limitsGlobal), queue.Logger(quiet)}
	rated = []queue.WorkerOption{queue.Node(c.Node), queue.Logger(quiet)}
	return limited, rated
}

// runLimits measures queue bench_limited (per_key: 3, global: 20): it
// pushes Jobs jobs over Tenants tenants (100 by default), starts 4 worker
// processes (this executable again, see ChildMain) of 20 handlers each,
// whose jobs take 20 ms, and samples the running jobs every 10 ms (half a
// job's time: a job over a limit is in a sample or two) from a
// connection of its own until the queue is drained. Its summary line is the drain's; a
// second line gives the samples' maxima, which must be within the limits
// (the workload fails otherwise), and the rate as a fraction of what the
// global limit allows (20 slots of 20 ms jobs: 1,000 jobs/s).
func runLimits(ctx context.Context, t target, cfg Config) error {
	lt, ok := t.(limitsTarget)
	if !ok { // Run refuses it first
		return errors.New("the limits workload measures limits, which this engine lacks")
	}
	if err := lt.pushLimited(ctx, func(i int) string { return fmt.Sprintf("t%04d", i%cfg.Tenants) }, cfg.Jobs); err != nil {
		return err
	}
	start := time.Now()
	stop, err := startWorkers(lt, "bench_limited")
	defer stop()
	if err != nil {
		return err
	}

	// Sample the running jobs until the queue is empty.
	var perKey, global, samples int
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	sampling.Go(func() {
		for sampleCtx.Err() == nil {
			if k, g, err := lt.limitedRunning(sampleCtx); err == nil {
				perKey, global, samples = max(perKey, k), max(global, g), samples+1
			}
			// Not more often: each sample takes the server about 0.4 ms,
			// on the two cores the workers share with it (every 2 ms,
			// the sampler cost the ratio 0.01–0.03×).
			time.Sleep(10 * time.Millisecond)
		}
	})
	// Drained when no job is due and none runs.
	for tick := 0; ; tick++ {
		left, running, err := lt.limitedLeft(ctx)
		if err != nil {
			stopSampling()
			return err
		}
		if left == 0 && running == 0 {
			break
		}
		if tick%10 == 0 {
			fmt.Fprintf(cfg.Progress, "limits: %d jobs waiting, %d running\n", left, running)
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(start)
	stopSampling()
	sampling.Wait()
	cfg.summary(Limits, int64(cfg.Jobs), took, nil)
	ceiling := float64(limitsGlobal) / limitsWork.Seconds()
	fmt.Fprintf(cfg.notes(), "  limits: %d samples: at most %d running per tenant (limit %d), %d in all (limit %d); %.2f× of the %.0f jobs/s the global limit allows (%d slots, %s jobs)\n",
		samples, perKey, limitsPerKey, global, limitsGlobal, float64(cfg.Jobs)/took.Seconds()/ceiling, ceiling, limitsGlobal, limitsWork)
	if perKey > limitsPerKey || global > limitsGlobal {
		return fmt.Errorf("sampled %d running jobs of one tenant and %d in all, over the limits (%d, %d)", perKey, global, limitsPerKey, limitsGlobal)
	}
	return nil
}

// startWorkers starts limitsProcs worker processes of queue (this
// executable again, see ChildMain) and waits until each is ready. stop
// shuts down those it started, gracefully.
func startWorkers(lt limitsTarget, queue string) (stop func(), err error) {
	var procs []*exec.Cmd
	stop = func() {
		for _, p := range procs {
			p.Process.Signal(syscall.SIGTERM)
			p.Wait()
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return stop, err
	}
	for i := range limitsProcs {
		spec, _ := json.Marshal(child{URL: lt.address(), Node: fmt.Sprintf("%s-%d", queue, i), Queue: queue})
		p := exec.Command(exe)
		p.Env = append(os.Environ(), childEnv+"="+string(spec))
		p.Stderr = os.Stderr
		if _, err := p.StdinPipe(); err != nil { // closes when this process exits
			return stop, err
		}
		out, err := p.StdoutPipe()
		if err != nil {
			return stop, err
		}
		if err := p.Start(); err != nil {
			return stop, err
		}
		procs = append(procs, p)
		if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
			return stop, fmt.Errorf("worker process %d of %s did not start: %q, %v", i, queue, line, err)
		}
	}
	return stop, nil
}

func (t *pgTarget) address() string { return t.url }

func (t *pgTarget) pushLimited(ctx context.Context, tenant func(int) string, n int) error {
	return pushInBatches(ctx, n, 10000, func(i int) jobs.BenchLimitedPayload { return jobs.BenchLimitedPayload{Tenant: tenant(i), N: int32(i)} },
		jobs.NewBenchLimitedQueue(t.pool).PushMany)
}

// leased is the PostgreSQL condition of a job that holds a lease (which a
// job does exactly while it runs), written as the claim writes it: a
// closed range of the lease index (locked_until). The planner reads
// "locked_until IS NOT NULL" of a table without statistics (never
// analyzed, as under autovacuum = off) as true of nearly every row and
// scans the whole table: a sample (then every 2 ms) read the queue's every
// row and took 0.6 ms of the server's time at the median, about a third
// of one of the two cores the bench measures on.
const leased = "locked_until BETWEEN '-infinity' AND 'infinity'"

// limitedRunning: the sample reads the lease index, not the table.
func (t *pgTarget) limitedRunning(ctx context.Context) (perKey, global int, err error) {
	err = t.pool.QueryRow(ctx, `SELECT coalesce(max(n), 0), coalesce(sum(n), 0)
FROM (SELECT count(*) AS n FROM `+Schema+`.bench_limited_queue WHERE `+leased+` GROUP BY tenant) AS per`).Scan(&perKey, &global)
	return perKey, global, err
}

// limitedLeft reads both counts through indexes.
func (t *pgTarget) limitedLeft(ctx context.Context) (left, running int, err error) {
	err = t.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+Schema+`.bench_limited_queue WHERE state = 'available'),
       (SELECT count(*) FROM `+Schema+`.bench_limited_queue WHERE `+leased+`)`).Scan(&left, &running)
	return left, running, err
}

// address is a go-sql-driver DSN of the bench's database.
func (t *myTarget) address() string { return t.dsn }

func (t *myTarget) pushLimited(ctx context.Context, tenant func(int) string, n int) error {
	return pushInBatches(ctx, n, 1000, func(i int) myjobs.BenchLimitedPayload {
		return myjobs.BenchLimitedPayload{Tenant: tenant(i), N: int32(i)}
	},
		myjobs.NewBenchLimitedQueue(t.db).PushMany)
}

// limitedRunning: a job is in state running exactly while it is leased;
// the sample reads the fair index (state, tenant, …), not the table. Each
// statement (autocommit) reads a fresh snapshot.
func (t *myTarget) limitedRunning(ctx context.Context) (perKey, global int, err error) {
	err = t.db.QueryRowContext(ctx, `SELECT coalesce(max(n), 0), coalesce(sum(n), 0)
FROM (SELECT count(*) AS n FROM bench_limited_queue WHERE state = 'running' GROUP BY tenant) AS per`).Scan(&perKey, &global)
	return perKey, global, err
}

func (t *myTarget) limitedLeft(ctx context.Context) (left, running int, err error) {
	err = t.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM bench_limited_queue WHERE state = 'available'),
       (SELECT count(*) FROM bench_limited_queue WHERE state = 'running')`).Scan(&left, &running)
	return left, running, err
}
