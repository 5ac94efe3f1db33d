package queue_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	myjobs "github.com/queuegen/queuegen/examples/mailer-mysql/jobs"
	pgjobs "github.com/queuegen/queuegen/examples/mailer/jobs"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/pgtest"
	"github.com/queuegen/queuegen/queue"
)

func TestMain(m *testing.M) { os.Exit(pgtest.RunMain(m)) }

// flakyBeats is an accessor whose first beats fail, as when the database
// is briefly unreachable.
type flakyBeats[Q interface {
	BeatNode(context.Context, queue.NodeBeat) error
}] struct {
	q     Q
	fails atomic.Int32
}

func (f *flakyBeats[Q]) BeatNode(ctx context.Context, b queue.NodeBeat) error {
	if f.fails.Add(-1) >= 0 {
		return errors.New("the database is away")
	}
	return f.q.BeatNode(ctx, b)
}

type pgFlaky struct {
	*pgjobs.EmailQueue
	*flakyBeats[*pgjobs.EmailQueue]
}

func (f pgFlaky) BeatNode(ctx context.Context, b queue.NodeBeat) error {
	return f.flakyBeats.BeatNode(ctx, b)
}

type myFlaky struct {
	*myjobs.EmailQueue
	*flakyBeats[*myjobs.EmailQueue]
}

func (f myFlaky) BeatNode(ctx context.Context, b queue.NodeBeat) error {
	return f.flakyBeats.BeatNode(ctx, b)
}

// TestWorkersRecordTheirNodes runs a lease-mode and a transaction-mode
// worker of the example app on each engine and reads queuegen_nodes: each
// records its row (node id, concurrency, this process, its interval),
// its heartbeats move heartbeat_at on, the lease worker's first two beats
// failing does not stop it (it records its row at the next), and a
// graceful stop deletes both rows.
//
// Then two workers of one queue under one node id share a row, which sums
// their concurrency and goes when the last of them stops.
//
// It catches: a worker that records no node or the wrong facts, a
// heartbeat that runs once only, a failed beat that stops the worker or
// ends the heartbeat, a graceful stop that leaves its row (the node would
// be shown stale), and workers sharing a row that overwrite each other's
// facts or delete it while one still runs.
func TestWorkersRecordTheirNodes(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.ThisRun() {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			db := dbtest.New(t, engine)
			migrateExample(t, engine, db.Address)
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			opts := []queue.WorkerOption{queue.Node("n1"), queue.Concurrency(3), queue.NodeHeartbeat(50 * time.Millisecond),
				queue.PollInterval(20 * time.Millisecond), queue.Logger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
			type runner interface{ Run(context.Context) error }
			var lease, tx runner
			var another func(opts ...queue.WorkerOption) runner // a plain email worker
			if engine == dburl.MySQL {
				h := db.SQL
				emails := myjobs.NewEmailQueue(h)
				f := myFlaky{emails, &flakyBeats[*myjobs.EmailQueue]{q: emails}}
				f.fails.Store(2)
				lease = queue.NewWorker[myjobs.EmailPayload](f, func(context.Context, *queue.Job[myjobs.EmailPayload]) error { return nil }, opts...)
				tx = myjobs.NewStatementQueue(h).Worker(func(context.Context, *sql.Tx, *queue.Job[myjobs.StatementPayload]) error { return nil }, opts...)
				another = func(opts ...queue.WorkerOption) runner {
					return emails.Worker(func(context.Context, *queue.Job[myjobs.EmailPayload]) error { return nil }, opts...)
				}
			} else {
				pool, err := pgxpool.New(ctx, db.Address)
				if err != nil {
					t.Fatal(err)
				}
				defer pool.Close()
				emails := pgjobs.NewEmailQueue(pool)
				f := pgFlaky{emails, &flakyBeats[*pgjobs.EmailQueue]{q: emails}}
				f.fails.Store(2)
				lease = queue.NewWorker[pgjobs.EmailPayload](f, func(context.Context, *queue.Job[pgjobs.EmailPayload]) error { return nil }, opts...)
				tx = pgjobs.NewStatementQueue(pool).Worker(func(context.Context, pgx.Tx, *queue.Job[pgjobs.StatementPayload]) error { return nil }, opts...)
				another = func(opts ...queue.WorkerOption) runner {
					return emails.Worker(func(context.Context, *queue.Job[pgjobs.EmailPayload]) error { return nil }, opts...)
				}
			}
			done := make(chan error, 2)
			go func() { done <- lease.Run(ctx) }()
			go func() { done <- tx.Run(ctx) }()

			row := func(q string) (facts string, beat time.Time, ok bool) {
				t.Helper()
				var conc, pid, ms int
				var host string
				err := db.SQL.QueryRow("SELECT concurrency, pid, heartbeat_ms, host, heartbeat_at FROM queuegen_nodes WHERE node = 'n1' AND queue = '"+q+"'").
					Scan(&conc, &pid, &ms, &host, &beat)
				if errors.Is(err, sql.ErrNoRows) {
					return "", beat, false
				}
				if err != nil {
					t.Fatal(err)
				}
				return strconv.Itoa(conc) + " " + strconv.Itoa(pid) + " " + strconv.Itoa(ms) + " " + host, beat, true
			}
			host, _ := os.Hostname()
			want := "3 " + strconv.Itoa(os.Getpid()) + " 50 " + host
			for _, q := range []string{"email", "statement"} {
				deadline := time.Now().Add(10 * time.Second)
				var first time.Time
				for {
					facts, beat, ok := row(q)
					if ok && facts != want {
						t.Fatalf("queue %s's node row: %q, want %q", q, facts, want)
					}
					if ok && first.IsZero() {
						first = beat
					} else if ok && beat.After(first) {
						break // a later heartbeat moved it on
					}
					if time.Now().After(deadline) {
						t.Fatalf("queue %s: no node row, or its heartbeat did not move on within 10 s (row %v, first beat %v)", q, ok, first)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}

			stop()
			for range 2 {
				if err := <-done; err != nil {
					t.Fatalf("a worker's graceful stop: %v", err)
				}
			}
			var n int
			if err := db.SQL.QueryRow("SELECT COUNT(*) FROM queuegen_nodes").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d node rows after both workers stopped gracefully, want none", n)
			}

			// Two workers of one queue in this process, under one node id,
			// share its row: it sums their concurrency, and stays until the
			// last of them stops.
			concurrency := func() (int, bool) {
				var c int
				err := db.SQL.QueryRow("SELECT concurrency FROM queuegen_nodes WHERE node = 'n2' AND queue = 'email'").Scan(&c)
				if errors.Is(err, sql.ErrNoRows) {
					return 0, false
				}
				if err != nil {
					t.Fatal(err)
				}
				return c, true
			}
			waitFor := func(what string, want int) {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for c, ok := concurrency(); !ok || c != want; c, ok = concurrency() {
					if time.Now().After(deadline) {
						t.Fatalf("%s: the shared row's concurrency is %d (row %v), want %d", what, c, ok, want)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			// Beats a second apart: a row deleted by the first stop would
			// be missing for most of a second.
			quiet := []queue.WorkerOption{queue.Node("n2"), queue.NodeHeartbeat(time.Second), queue.PollInterval(20 * time.Millisecond),
				queue.Logger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
			ctx1, stop1 := context.WithCancel(context.Background())
			defer stop1()
			ctx2, stop2 := context.WithCancel(context.Background())
			defer stop2()
			go func() { done <- another(append(quiet, queue.Concurrency(2))...).Run(ctx1) }()
			go func() { done <- another(append(quiet, queue.Concurrency(3))...).Run(ctx2) }()
			waitFor("both running", 5)
			stop1()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if _, ok := concurrency(); !ok {
				t.Fatal("the first worker's stop deleted the row the second still records")
			}
			waitFor("one stopped", 3)
			stop2()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if c, ok := concurrency(); ok {
				t.Errorf("the shared row (concurrency %d) outlived both workers' graceful stops", c)
			}
		})
	}
}

// TestMaintainerForgetsStaleNodes: on each engine, a Maintainer's pass
// deletes the row of a node silent for longer than ForgetNodesAfter and
// keeps one that beat recently; ForgetNodesAfter(0) is refused. It catches
// a maintainer that never deletes killed nodes' rows (they would be listed
// as stale for ever) or deletes live ones.
func TestMaintainerForgetsStaleNodes(t *testing.T) {
	t.Parallel()
	if _, err := queue.NewMaintainer(nil, queue.ForgetNodesAfter(0)).RunOnce(context.Background()); !errors.Is(err, queue.ErrOption) {
		t.Errorf("ForgetNodesAfter(0): %v, want an option error", err)
	}
	for _, engine := range dbtest.ThisRun() {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			db := dbtest.New(t, engine)
			now, old := "now()", "now() - interval '2 hours'"
			if engine == dburl.MySQL {
				now, old = "UTC_TIMESTAMP(6)", "UTC_TIMESTAMP(6) - INTERVAL 2 HOUR"
			}
			migrateExample(t, engine, db.Address)
			ctx := context.Background()
			for _, row := range [][2]string{{"killed", old}, {"alive", now}} {
				if _, err := db.SQL.Exec(`INSERT INTO queuegen_nodes (node, queue, concurrency, running, host, pid, started_at, heartbeat_at, heartbeat_ms)
VALUES ('` + row[0] + `', 'email', 1, 0, 'h', 1, ` + row[1] + `, ` + row[1] + `, 5000)`); err != nil {
					t.Fatal(err)
				}
			}
			var emails queue.Maintained
			if engine == dburl.MySQL {
				h := db.SQL
				emails = myjobs.NewEmailQueue(h)
			} else {
				pool, err := pgxpool.New(ctx, db.Address)
				if err != nil {
					t.Fatal(err)
				}
				defer pool.Close()
				emails = pgjobs.NewEmailQueue(pool)
			}
			reports, err := queue.NewMaintainer([]queue.Maintained{emails}, queue.ForgetNodesAfter(time.Hour),
				queue.MaintainerLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))).RunOnce(ctx)
			if err != nil || len(reports) != 1 || reports[0].ForgottenNodes != 1 {
				t.Fatalf("a pass: %+v, %v; want one node forgotten", reports, err)
			}
			var left string
			if err := db.SQL.QueryRow("SELECT node FROM queuegen_nodes").Scan(&left); err != nil || left != "alive" {
				t.Errorf("left: %q, %v; want the alive node alone", left, err)
			}
		})
	}
}
