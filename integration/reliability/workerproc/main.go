// Command workerproc is a worker process of the reliability suite: it works
// queue "work" until SIGTERM (a graceful shutdown) or SIGKILL (the test
// killing it at a random moment): -queue work (the default), limited,
// backlogged, fair, rated or archived. Every delivery is logged to table
// handled, with this process's incarnation, so the test can tell which
// re-deliveries followed a holder's death. Each run that returns success is
// recorded first. -db is a PostgreSQL URL or a MySQL DSN or URL: the
// engine decides which generated package works the queue. With -citus,
// -db is the URL of a Citus coordinator and the Citus spec's package
// (cjobs, queues distributed by bucket) works queue work.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/integration/reliability/citus/cjobs"
	"github.com/queuegen/queuegen/integration/reliability/jobs"
	"github.com/queuegen/queuegen/integration/reliability/mysql/myjobs"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/queue"
)

func main() {
	db := flag.String("db", "", "database URL (PostgreSQL) or DSN (MySQL)")
	node := flag.String("node", "", "node id (stable across restarts of one slot)")
	instance := flag.String("instance", "", "this incarnation's id")
	concurrency := flag.Int("concurrency", 8, "handlers at once")
	flag.DurationVar(&workFor, "work", 20*time.Millisecond, "how long a handler works a job, at most (at random)")
	name := flag.String("queue", "work", "the queue to work: work, limited, backlogged, fair, rated or archived")
	distributed := flag.Bool("citus", false, "-db is a Citus coordinator: work the Citus spec's queue (work only)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fmt.Println("ready") // SIGTERM now shuts down gracefully
	opts := []queue.WorkerOption{queue.Node(*node), queue.Concurrency(*concurrency), queue.PollInterval(100 * time.Millisecond),
		queue.ShutdownTimeout(5 * time.Second), queue.Logger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
	parsed, err := dburl.Parse(*db)
	if err != nil {
		log.Fatal(err)
	}
	var w interface{ Run(context.Context) error }
	switch {
	case *distributed && *name != "work":
		log.Fatalf("no queue %q on Citus", *name)
	case *name == "work", *name == "limited", *name == "backlogged", *name == "fair", *name == "rated", *name == "archived":
	default:
		log.Fatalf("no queue %q on %s", *name, parsed.Engine)
	}
	if *distributed {
		pool, err := pgxpool.New(ctx, *db)
		if err != nil {
			log.Fatal(err)
		}
		defer pool.Close()
		record := func(ctx context.Context, args ...any) error {
			_, err := pool.Exec(ctx, "INSERT INTO handled (queue, job_id, attempt, instance, run) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
				append([]any{*name + "_queue"}, args...)...)
			return err
		}
		l := newLeases(func(ctx context.Context, args ...any) error {
			_, err := pool.Exec(ctx, "INSERT INTO lapsed (queue, job_id, attempt, instance, why) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
				append([]any{*name + "_queue"}, args...)...)
			return err
		}, *instance)
		w = worker[cjobs.WorkPayload](cjobs.NewWorkQueue(pool), *instance, record, l, opts)
	} else if parsed.Engine == dburl.MySQL {
		mysql.SetLogger(log.New(io.Discard, "", 0)) // the broken connections of a test's kills
		h, err := parsed.Open()
		if err != nil {
			log.Fatal(err)
		}
		defer h.Close()
		h.SetMaxIdleConns(2 * *concurrency)
		record := func(ctx context.Context, args ...any) error {
			_, err := h.ExecContext(ctx, "INSERT INTO handled (queue, job_id, attempt, instance, run) VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE run = run",
				append([]any{*name + "_queue"}, args...)...)
			return err
		}
		l := newLeases(func(ctx context.Context, args ...any) error {
			_, err := h.ExecContext(ctx, "INSERT IGNORE INTO lapsed (queue, job_id, attempt, instance, why) VALUES (?, ?, ?, ?, ?)",
				append([]any{*name + "_queue"}, args...)...)
			return err
		}, *instance)
		switch *name {
		case "limited":
			w = worker[myjobs.LimitedPayload](myjobs.NewLimitedQueue(h), *instance, record, l, opts)
		case "backlogged":
			w = worker[myjobs.BackloggedPayload](myjobs.NewBackloggedQueue(h), *instance, record, l, opts)
		case "fair":
			w = worker[myjobs.FairPayload](myjobs.NewFairQueue(h), *instance, record, l, opts)
		case "rated":
			w = worker[myjobs.RatedPayload](myjobs.NewRatedQueue(h), *instance, record, l, opts)
		case "archived":
			w = worker[myjobs.ArchivedPayload](myjobs.NewArchivedQueue(h), *instance, record, l, opts)
		default:
			w = worker[myjobs.WorkPayload](myjobs.NewWorkQueue(h), *instance, record, l, opts)
		}
	} else {
		pool, err := pgxpool.New(ctx, *db)
		if err != nil {
			log.Fatal(err)
		}
		defer pool.Close()
		record := func(ctx context.Context, args ...any) error {
			_, err := pool.Exec(ctx, "INSERT INTO handled (queue, job_id, attempt, instance, run) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
				append([]any{*name + "_queue"}, args...)...)
			return err
		}
		l := newLeases(func(ctx context.Context, args ...any) error {
			_, err := pool.Exec(ctx, "INSERT INTO lapsed (queue, job_id, attempt, instance, why) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
				append([]any{*name + "_queue"}, args...)...)
			return err
		}, *instance)
		switch *name {
		case "limited":
			w = worker[jobs.LimitedPayload](jobs.NewLimitedQueue(pool), *instance, record, l, opts)
		case "backlogged":
			w = worker[jobs.BackloggedPayload](jobs.NewBackloggedQueue(pool), *instance, record, l, opts)
		case "fair":
			w = worker[jobs.FairPayload](jobs.NewFairQueue(pool), *instance, record, l, opts)
		case "rated":
			w = worker[jobs.RatedPayload](jobs.NewRatedQueue(pool), *instance, record, l, opts)
		case "archived":
			w = worker[jobs.ArchivedPayload](jobs.NewArchivedQueue(pool), *instance, record, l, opts)
		default:
			w = worker[jobs.WorkPayload](jobs.NewWorkQueue(pool), *instance, record, l, opts)
		}
	}
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

// workFor is how long a handler works a job, at most (-work).
var workFor time.Duration

// worker is q's worker, its leases watched by l (see leases), running
// handler.
func worker[P any](q queue.LeaseQueue[P], instance string, record func(ctx context.Context, args ...any) error, l *leases, opts []queue.WorkerOption) *queue.Worker[P] {
	return queue.NewWorker[P](watch[P](q, l), handler[P](instance, record, l), opts...)
}

// newLeases is a leases that logs each lapse it sees with insert (job id,
// attempt, instance, why), retrying until the database has it, as handler
// records its runs.
func newLeases(insert func(ctx context.Context, args ...any) error, instance string) *leases {
	return &leases{deadline: map[jobKey]time.Time{}, record: func(ctx context.Context, id int64, attempt int32, why string) {
		for insert(ctx, id, attempt, instance, why) != nil {
			time.Sleep(20 * time.Millisecond)
		}
	}}
}

// handler works a job for a moment (up to workFor), then records the successful run
// (job id, attempt, instance, run token) with record, retrying until the
// database has it (the suite's accounting: see audit), logs a lapse if
// its lease ran out meanwhile (see leases), and returns success.
func handler[P any](instance string, record func(ctx context.Context, args ...any) error, l *leases) queue.Handler[P] {
	return func(ctx context.Context, job *queue.Job[P]) error {
		time.Sleep(rand.N(workFor + 1))
		run := strconv.FormatUint(rand.Uint64(), 36)
		for {
			if err := record(context.WithoutCancel(ctx), job.ID, job.Attempt, instance, run); err == nil {
				l.ended(ctx, job.ID, job.Attempt)
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
