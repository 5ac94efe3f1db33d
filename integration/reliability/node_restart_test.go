//go:build citus

package reliability_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/queue"
)

// envCitusRestart names the shell command that restarts one worker node
// of the Citus cluster of $QUEUEGEN_CITUS_URL for TestWorkerNodeRestarted,
// returning once the node is up again.
const envCitusRestart = "QUEUEGEN_CITUS_RESTART"

const citusRestartHowTo = "set " + envCitusRestart + " to a shell command that restarts one worker node of the Citus cluster of " +
	"$QUEUEGEN_CITUS_URL and returns once it is up again, for example " +
	`'su postgres -c "/usr/lib/postgresql/15/bin/pg_ctl -D /tmp/citus/w1 -l /tmp/citus/w1.log -m fast -w restart"'` +
	" (the README's \"Running on Citus\")"

// TestWorkerNodeRestarted: two workers drain queue work, distributed over
// 64 buckets on a Citus cluster, and while they do, one worker node of the
// cluster is restarted ($QUEUEGEN_CITUS_RESTART; pg_ctl restart -m fast
// ends its sessions at once): the claims, completions and lease extensions
// routed to its shards fail until it is back, while those of the other
// node's shards go on. The workers survive the errors (Run returns nil, no
// worker gives up: they retry their claims and writes), and after the node
// is back the drain finishes: nothing lost, nothing completed twice,
// nothing completed without a successful handler run (the audit's
// triggers log each completion on the node holding the job, in the
// delete's transaction: see citusAudit), no job left. A successful run may
// repeat when a lease (2 s) runs out while its completion waits for the
// node, lease mode's at-least-once; but no claim takes a job from its
// holder before the lease has run out (the audit's reclaims, by the
// clock of the node holding the job, which the claim reads too). The test checks that the command
// restarted a worker node of this cluster (its postmaster start time
// changed) and that the workers met errors (else it tested nothing). It
// would catch a worker that gives up or stops claiming after the errors
// of a shard's node, a completion dropped rather than retried, a claim
// whose jobs were lost when the statement failed mid-walk, and results
// written twice. Citus only; it is not parallel to the other scenarios,
// which share the cluster's nodes.
func TestWorkerNodeRestarted(t *testing.T) {
	// No t.Parallel: the parallel scenarios (the other Citus ones among
	// them) wait until the sequential tests are done.
	for _, engine := range dbtest.AndCitus(nil) {
		t.Run(engine, func(t *testing.T) {
			command := strings.TrimSpace(os.Getenv(envCitusRestart))
			if command == "" {
				t.Fatalf("no command to restart a worker node of the Citus cluster: %s", citusRestartHowTo)
			}
			tg := prepare(t, engine, "")
			total := scale(3000, 30000)
			pushWork(t, tg, total)
			before := workerStarts(t, tg, time.Minute)
			warnings := &countingHandler{}
			stop := runWorkers(t, tg, 2, 5*time.Millisecond, queue.Logger(slog.New(warnings)))
			// Some jobs done, most not: the node restarts mid-drain.
			deadline := time.Now().Add(time.Minute)
			for unfinished(t, tg) > total*9/10 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			left := unfinished(t, tg)
			if left == 0 {
				t.Fatal("the queue was drained before the restart: the scenario tests nothing")
			}
			began := time.Now()
			out, err := runShell(t, command)
			took := time.Since(began)
			if err != nil {
				t.Fatalf("$%s (%s): %v\n%s", envCitusRestart, command, err, out)
			}
			after := workerStarts(t, tg, time.Minute)
			var restarted []string
			for node, at := range after {
				if b, ok := before[node]; ok && b != at {
					restarted = append(restarted, node)
				}
			}
			if len(restarted) == 0 {
				t.Fatalf("$%s (%s) restarted no worker node of the cluster (postmaster start times %v, then %v)", envCitusRestart, command, before, after)
			}
			back := time.Now()
			waitFinished(t, tg, "work_queue", 3*time.Minute)
			drained := time.Since(back)
			stop()
			n, first := warnings.seen()
			c := tally(t, tg, "work_queue", total) // collects the audit's reclaims too
			expired := tg.count(t, "SELECT count(*) FROM reclaimed WHERE queue = 'work_queue' AND lease_until < at")
			early := tg.count(t, "SELECT count(*) FROM reclaimed WHERE queue = 'work_queue' AND NOT (lease_until < at)")
			check(t, tg, "worker-node-restart", c, atLeastOnce,
				fmt.Sprintf("node %s restarted in %s with %d of %d jobs left", strings.Join(restarted, ", "), took.Round(100*time.Millisecond), left, total),
				fmt.Sprintf("%d errors the workers retried", n),
				fmt.Sprintf("%d jobs claimed from a holder after its lease ran out, %d before", expired, early),
				fmt.Sprintf("drained %s after the node was back", drained.Round(100*time.Millisecond)))
			t.Logf("the workers' first error: %s", first)
			if n == 0 {
				t.Error("the workers met no error while a worker node restarted: the scenario tests nothing")
			}
			if early != 0 {
				t.Errorf("%d claims took a job from its holder before its lease ran out (by the clock of the node holding it)", early)
			}
		})
	}
}

// workerStarts is each active worker node's postmaster start time, by
// node (host:port), asked until every node answers (for up to wait).
func workerStarts(t *testing.T, tg *target, wait time.Duration) map[string]string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		starts, failed := map[string]string{}, 0
		var err error
		rows, qerr := tg.pool.Query(context.Background(),
			`SELECT nodename || ':' || nodeport, success, result FROM run_command_on_workers('SELECT pg_postmaster_start_time()')`)
		if err = qerr; err == nil {
			for rows.Next() {
				var node, result string
				var ok bool
				if err = rows.Scan(&node, &ok, &result); err != nil {
					break
				}
				if !ok {
					failed++
				}
				starts[node] = result
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
		if err == nil && failed == 0 && len(starts) > 0 {
			return starts
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker nodes did not all answer within %s: %v (%d failed: %v)", wait, err, failed, starts)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// runShell runs command with sh -c, its output to a file rather than a
// pipe (a server started by it keeps its inherited output open, and a
// pipe would never end), and returns that output.
func runShell(t *testing.T, command string) (string, error) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "restart-*.out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sh", "-c", command)
	cmd.Stdout, cmd.Stderr = f, f
	runErr := cmd.Run()
	out, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(out), runErr
}

// countingHandler is a slog handler that counts the warnings and errors
// the workers log (a failed claim, a write retried, a heartbeat failed)
// and keeps the first.
type countingHandler struct {
	mu    sync.Mutex
	n     int
	first string
}

func (h *countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	if h.first == "" {
		var b strings.Builder
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
			return true
		})
		h.first = b.String()
	}
	return nil
}

func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

// seen is how many warnings and errors were logged, and the first.
func (h *countingHandler) seen() (int, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n, h.first
}
