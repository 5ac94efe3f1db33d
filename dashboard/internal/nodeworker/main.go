// Command nodeworker is a worker process of the dashboard's nodes test: it
// works queue email of the example app (examples/mailer on PostgreSQL,
// examples/mailer-mysql on MySQL or MariaDB, examples/mailer-citus on a
// Citus cluster, as -app says) as node -node, with a handler
// that holds each job until the worker shuts down, so that the jobs it
// claimed stay leased to it. SIGTERM shuts it down gracefully; the test
// SIGKILLs one to leave its node stale and its leases held.
package main

import (
	"context"
	"flag"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	citusjobs "github.com/queuegen/queuegen/examples/mailer-citus/jobs"
	"github.com/queuegen/queuegen/examples/mailer-mysql/jobs"
	pgjobs "github.com/queuegen/queuegen/examples/mailer/jobs"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/queue"
)

func main() {
	db := flag.String("db", "", "database URL (PostgreSQL) or DSN (MySQL)")
	app := flag.String("app", "mailer", "the example whose generated package works the queue: mailer (PostgreSQL), mailer-mysql or mailer-citus")
	node := flag.String("node", "", "node id")
	concurrency := flag.Int("concurrency", 2, "handlers at once")
	beat := flag.Duration("beat", 200*time.Millisecond, "node heartbeat interval")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	opts := []queue.WorkerOption{queue.Node(*node), queue.Concurrency(*concurrency), queue.NodeHeartbeat(*beat),
		queue.PollInterval(100 * time.Millisecond), queue.ShutdownTimeout(5 * time.Second),
		queue.Logger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
	var w interface{ Run(context.Context) error }
	switch *app {
	case "mailer-mysql":
		parsed, err := dburl.Parse(*db)
		if err != nil {
			log.Fatal(err)
		}
		h, err := parsed.Open()
		if err != nil {
			log.Fatal(err)
		}
		defer h.Close()
		w = jobs.NewEmailQueue(h).Worker(hold[jobs.EmailPayload], opts...)
	case "mailer":
		pool, err := pgxpool.New(ctx, *db)
		if err != nil {
			log.Fatal(err)
		}
		defer pool.Close()
		w = pgjobs.NewEmailQueue(pool).Worker(hold[pgjobs.EmailPayload], opts...)
	case "mailer-citus":
		pool, err := pgxpool.New(ctx, *db)
		if err != nil {
			log.Fatal(err)
		}
		defer pool.Close()
		w = citusjobs.NewEmailQueue(pool).Worker(hold[citusjobs.EmailPayload], opts...)
	default:
		log.Fatalf("no example %q (mailer, mailer-mysql or mailer-citus)", *app)
	}
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

// hold keeps the job until the worker's shutdown cancels it; the worker
// then releases it.
func hold[P any](ctx context.Context, _ *queue.Job[P]) error {
	<-ctx.Done()
	return ctx.Err()
}
