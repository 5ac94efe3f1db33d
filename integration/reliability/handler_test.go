package reliability_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/integration/reliability/jobs"
	"github.com/queuegen/queuegen/queue"
)

// TestHandlerFailures: handlers that panic or hang past their timeout,
// and jobs whose JSON payload was edited to a shape that no longer
// decodes, each end dead with their error kept, while the worker goes on
// with the healthy jobs. On every engine.
func TestHandlerFailures(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		tg := prepare(t, engine, "")
		const healthy, each = 200, 5
		var ps []work
		for i := range healthy {
			ps = append(ps, work{N: int64(i), Kind: "ok"})
		}
		if err := tg.work.pushMany(ctx, ps); err != nil {
			t.Fatal(err)
		}
		for i := range each {
			for _, kind := range []string{"panic", "hang", "error"} {
				if _, err := tg.work.push(ctx, work{N: int64(i), Kind: kind}, queue.MaxAttempts(2)); err != nil {
					t.Fatal(err)
				}
			}
		}
		var eventIDs []int64
		for i := range 2 * each {
			res, err := tg.events.push(ctx, event{N: int64(i), Label: "fine"})
			if err != nil {
				t.Fatal(err)
			}
			eventIDs = append(eventIDs, res.ID)
		}
		// Half the events are edited to a wrong shape (label a number).
		for _, id := range eventIDs[:each] {
			if err := tg.exec(ctx, `UPDATE event_queue SET payload = '{"n": 1, "label": 42}' WHERE id = ?`, id); err != nil {
				t.Fatal(err)
			}
		}

		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{}, 2)
		go func() {
			tg.work.worker(func(ctx context.Context, job *queue.Job[work]) error {
				switch job.Payload.Kind {
				case "panic":
					var p *work
					_ = p.N // nil dereference
				case "hang":
					<-ctx.Done()
					return ctx.Err()
				case "error":
					return errors.New("upstream said no")
				}
				record(ctx, tg, "work_queue", job.ID, job.Attempt, "w")
				return nil
			}, queue.JobTimeout(200*time.Millisecond), queue.Concurrency(8), queue.PollInterval(50*time.Millisecond), queue.Logger(quiet)).Run(runCtx)
			done <- struct{}{}
		}()
		go func() {
			tg.events.worker(func(ctx context.Context, job *queue.Job[event]) error {
				record(ctx, tg, "event_queue", job.ID, job.Attempt, "w")
				return nil
			},
				queue.PollInterval(50*time.Millisecond), queue.Logger(quiet)).Run(runCtx)
			done <- struct{}{}
		}()
		waitFinished(t, tg, "work_queue", time.Minute)
		waitFinished(t, tg, "event_queue", time.Minute)
		cancel()
		<-done
		<-done

		wc := tally(t, tg, "work_queue", healthy+3*each)
		check(t, tg, "handler-failures", wc, exactlyOnce)
		if wc.dead != 3*each || wc.completed != healthy {
			t.Errorf("work: %d dead, %d completed; want %d dead, %d completed", wc.dead, wc.completed, 3*each, healthy)
		}
		ec := tally(t, tg, "event_queue", 2*each)
		check(t, tg, "undecodable-payloads", ec, exactlyOnce)
		if ec.dead != each || ec.completed != each {
			t.Errorf("events: %d dead, %d completed; want %d of each", ec.dead, ec.completed, each)
		}
		// Each dead job keeps the error of each attempt.
		for kind, want := range map[string]string{"panic": "panic: runtime error: invalid memory address", "hang": "job timed out after 200ms", "error": "upstream said no"} {
			errs := tg.jobErrors(t, "work_queue", "kind = ?", kind)
			if len(errs) != 2 || !strings.Contains(errs[0], want) || !strings.Contains(errs[1], want) {
				t.Errorf("%s job's errors = %q, want two attempts with %q", kind, errs, want)
			}
		}
		errs := tg.jobErrors(t, "event_queue", "state = 'dead'")
		if len(errs) != 1 || !strings.Contains(errs[0], "payload cannot be decoded") {
			t.Errorf("undecodable job's errors = %q", errs)
		}
	})
}

// TestIsolationLevels works a transaction-mode queue under READ
// COMMITTED, REPEATABLE READ and SERIALIZABLE, and a lease-mode
// queue with every session defaulting to SERIALIZABLE. Each handler adds
// one to a shared total in its transaction, so concurrent handlers
// conflict: serialization failures and deadlocks roll back and are
// retried, and in the end the total counts every job exactly once.
// PostgreSQL only: it is about PostgreSQL's isolation levels and
// serialization failures.
func TestIsolationLevels(t *testing.T) {
	t.Parallel()
	for _, level := range []queue.Isolation{queue.ReadCommitted, queue.RepeatableRead, queue.Serializable} {
		t.Run(strings.ToLower(level.String()), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tg := prepare(t, postgres, "")
			pool := tg.pool
			if _, err := pool.Exec(ctx, "CREATE TABLE total (n bigint NOT NULL); INSERT INTO total VALUES (0)"); err != nil {
				t.Fatal(err)
			}
			ledger := jobs.NewLedgerQueue(pool)
			total := scale(300, 3000)
			ps := make([]jobs.LedgerPayload, total)
			for i := range ps {
				ps[i] = jobs.LedgerPayload{N: int64(i)}
			}
			if _, err := ledger.PushMany(ctx, ps); err != nil {
				t.Fatal(err)
			}
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			var rolledBack atomic.Int64
			go func() {
				defer close(done)
				ledger.Worker(func(ctx context.Context, tx pgx.Tx, job *queue.Job[jobs.LedgerPayload]) error {
					if _, err := tx.Exec(ctx, "UPDATE total SET n = n + 1"); err != nil {
						return err
					}
					// Recorded in the job's transaction: it commits with
					// the completion, or not at all.
					_, err := tx.Exec(ctx, recordSQL, "ledger_queue", job.ID, job.Attempt, "w", runToken())
					return err
				}, queue.TxIsolation(level), queue.Concurrency(6), queue.PollInterval(20*time.Millisecond), queue.Logger(quiet),
					queue.WithHooks(queue.Hooks{JobFinished: func(_ context.Context, _ queue.JobInfo, o queue.Outcome, _ time.Duration, _ error) {
						if o == queue.OutcomeRolledBack {
							rolledBack.Add(1)
						}
					}})).Run(runCtx)
			}()
			waitFinished(t, tg, "ledger_queue", 2*time.Minute)
			cancel()
			<-done
			t.Logf("%s: %d serialization failures rolled back and retried", level, rolledBack.Load())
			if level != queue.ReadCommitted && rolledBack.Load() == 0 {
				t.Errorf("no serialization failure happened under %s: the scenario tests no retry", level)
			}
			if n := tg.count(t, "SELECT count(*) FROM completed_log WHERE attempt > 1"); n != 0 {
				t.Errorf("%d jobs used more than one attempt: serialization failures must not count as failed attempts", n)
			}
			var n int
			pool.QueryRow(ctx, "SELECT n FROM total").Scan(&n)
			if n != total {
				t.Errorf("the total is %d after %d jobs: a job's work was lost or committed twice", n, total)
			}
			check(t, tg, "isolation-"+strings.ReplaceAll(strings.ToLower(level.String()), " ", "-"), tally(t, tg, "ledger_queue", total), exactlyOnce)
		})
	}
	t.Run("lease mode, serializable sessions", func(t *testing.T) {
		t.Parallel()
		setup := prepare(t, postgres, "")
		total := scale(1000, 10000)
		pushWork(t, setup, total)
		cfg, err := pgxpool.ParseConfig(setup.address)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "serializable"
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		stop := runWorkers(t, setup.withPool(pool), 3, time.Millisecond)
		waitFinished(t, setup, "work_queue", 2*time.Minute)
		stop()
		check(t, setup, "isolation-lease-serializable", tally(t, setup, "work_queue", total), exactlyOnce)
	})
}
