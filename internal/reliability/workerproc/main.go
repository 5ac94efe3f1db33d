// Command workerproc is a worker process of the reliability suite: it works
// queue "work" until SIGTERM (a graceful shutdown) or SIGKILL (the test
// killing it at a random moment). Every delivery is logged to table
// handled, with this process's incarnation, so the test can tell which
// re-deliveries followed a holder's death.
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
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/internal/reliability/jobs"
	"github.com/queuegen/queuegen/queue"
)

func main() {
	db := flag.String("db", "", "database URL")
	node := flag.String("node", "", "node id (stable across restarts of one slot)")
	instance := flag.String("instance", "", "this incarnation's id")
	concurrency := flag.Int("concurrency", 8, "handlers at once")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fmt.Println("ready") // SIGTERM now shuts down gracefully
	pool, err := pgxpool.New(ctx, *db)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	q := jobs.NewWorkQueue(pool)
	w := q.Worker(func(ctx context.Context, job *queue.Job[jobs.WorkPayload]) error {
		if _, err := pool.Exec(ctx, "INSERT INTO handled (job_id, attempt, instance) VALUES ($1, $2, $3)", job.ID, job.Attempt, *instance); err != nil {
			return err
		}
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
		return nil
	}, queue.Node(*node), queue.Concurrency(*concurrency), queue.PollInterval(100*time.Millisecond),
		queue.ShutdownTimeout(5*time.Second), queue.Logger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
