package e2e_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/integration/e2e/mysql/myjobs"
	"github.com/queuegen/queuegen/integration/e2e/payload"
	"github.com/queuegen/queuegen/integration/e2e/sqlserver/msjobs"
	"github.com/queuegen/queuegen/queue"
)

// optionCase is one call of a generated accessor, with a bad option.
type optionCase struct {
	name, want string // want: in the error's text
	call       func(ctx context.Context) error
}

// TestBadOptionTouchesNoDatabase: on every engine's generated code, a
// worker (either mode) given a bad option returns the option's error from
// Run at once, and Push, PushMany and Claim return it, without opening a
// connection: the accessors' database is a listener that counts them. A
// good push against it does connect, which shows the count works. No
// server is needed, so it runs on SQL Server's generated code too.
func TestBadOptionTouchesNoDatabase(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"postgresql", "mysql", "sqlserver"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			addr, conns := countingListener(t)
			var task leaseQueue
			var runTx func(ctx context.Context, opts ...queue.WorkerOption) error
			var pushTx func(ctx context.Context, opts ...queue.PushOption) error
			switch engine {
			case "postgresql":
				pool, err := pgxpool.New(context.Background(), "postgres://nobody@"+addr+"/none?connect_timeout=5")
				if err != nil {
					t.Fatal(err)
				}
				defer pool.Close()
				tx := jobs.NewTxtaskQueue(pool)
				task = jobs.NewTaskQueue(pool)
				runTx = func(ctx context.Context, opts ...queue.WorkerOption) error {
					return tx.Worker(func(context.Context, pgx.Tx, *queue.Job[payload.Task]) error { return nil }, opts...).Run(ctx)
				}
				pushTx = func(ctx context.Context, opts ...queue.PushOption) error {
					_, err := tx.Push(ctx, payload.Task{N: 1}, opts...)
					return err
				}
			case "mysql", "sqlserver":
				dsn := map[string]string{
					"mysql":     "nobody@tcp(" + addr + ")/none?parseTime=true&loc=UTC&timeout=5s",
					"sqlserver": "sqlserver://sa:x@" + addr + "?database=none&dial+timeout=5",
				}[engine]
				db, err := sql.Open(engine, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				var tx interface {
					Worker(queue.TxHandler[payload.Task, *sql.Tx], ...queue.WorkerOption) *queue.TxWorker[payload.Task, *sql.Tx]
					Push(context.Context, payload.Task, ...queue.PushOption) (queue.PushResult, error)
				}
				if engine == "mysql" {
					task, tx = myjobs.NewTaskQueue(db), myjobs.NewTxtaskQueue(db)
				} else {
					task, tx = msjobs.NewTaskQueue(db), msjobs.NewTxtaskQueue(db)
				}
				runTx = func(ctx context.Context, opts ...queue.WorkerOption) error {
					return tx.Worker(func(context.Context, *sql.Tx, *queue.Job[payload.Task]) error { return nil }, opts...).Run(ctx)
				}
				pushTx = func(ctx context.Context, opts ...queue.PushOption) error {
					_, err := tx.Push(ctx, payload.Task{N: 1}, opts...)
					return err
				}
			}
			handler := func(context.Context, *queue.Job[payload.Task]) error { return nil }
			depth := queue.WithHooks(queue.Hooks{Depth: func(string, int64) {}})
			var cases []optionCase
			for _, w := range []struct {
				want string
				opts []queue.WorkerOption
			}{
				{"StatsInterval(0s): must be positive", []queue.WorkerOption{depth, queue.StatsInterval(0)}},
				{"Concurrency(0): must be at least 1", []queue.WorkerOption{queue.Concurrency(0)}},
				{`Node(""): must not be empty`, []queue.WorkerOption{queue.Node("")}},
				{"Lease(0s): must be at least 1ms", []queue.WorkerOption{queue.Node("stable"), queue.Lease(0)}},
				{"TxIsolation(9)", []queue.WorkerOption{queue.TxIsolation(9)}},
				{"Logger(nil)", []queue.WorkerOption{queue.Logger(nil)}},
			} {
				cases = append(cases,
					optionCase{"Worker", "queue task: queue: " + w.want, func(ctx context.Context) error {
						return task.Worker(handler, w.opts...).Run(ctx)
					}},
					optionCase{"TxWorker", "queue txtask: queue: " + w.want, func(ctx context.Context) error { return runTx(ctx, w.opts...) }})
			}
			cases = append(cases,
				optionCase{"Push", "queue: Delay(-1s): must not be negative", func(ctx context.Context) error {
					_, err := task.Push(ctx, payload.Task{N: 1}, queue.Delay(-time.Second))
					return err
				}},
				optionCase{"Push", `queue: UniqueKey(""): must not be empty`, func(ctx context.Context) error {
					_, err := task.Push(ctx, payload.Task{N: 1}, queue.UniqueKey(""))
					return err
				}},
				optionCase{"PushMany", "queue: MaxAttempts(0): must be at least 1", func(ctx context.Context) error {
					_, err := task.PushMany(ctx, []payload.Task{{N: 1}}, queue.MaxAttempts(0))
					return err
				}},
				optionCase{"Claim", "queue: LeaseFor(0s): must be at least 1ms", func(ctx context.Context) error {
					_, err := task.Claim(ctx, "node", 1, queue.LeaseFor(0))
					return err
				}},
				optionCase{"Push (transaction mode)", "queue: RunAfter(0001-01-01T00:00:00Z): must not be the zero time", func(ctx context.Context) error {
					return pushTx(ctx, queue.RunAfter(time.Time{}))
				}},
			)
			for _, c := range cases {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				err := c.call(ctx)
				timedOut := ctx.Err() != nil
				cancel()
				if !errors.Is(err, queue.ErrOption) || !strings.Contains(err.Error(), c.want) || timedOut {
					t.Errorf("%s = %v, want at once an error wrapping queue.ErrOption with %q", c.name, err, c.want)
				}
			}
			if n := conns.Load(); n != 0 {
				t.Errorf("calls with bad options opened %d connections", n)
			}
			// The control: a good push does reach the database (and fails).
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := task.Push(ctx, payload.Task{N: 1}, queue.Delay(time.Second)); err == nil || errors.Is(err, queue.ErrOption) {
				t.Errorf("a good push through the closed listener = %v, want a connection error", err)
			}
			if conns.Load() == 0 {
				t.Errorf("a good push opened no connection: the count proves nothing")
			}
		})
	}
}

// countingListener listens on a loopback port that closes every
// connection at once and counts them: the address of a "database" for
// tests that must show nothing connects. It is closed when the test ends.
func countingListener(t *testing.T) (addr string, conns *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	conns = new(atomic.Int32)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	return l.Addr().String(), conns
}
