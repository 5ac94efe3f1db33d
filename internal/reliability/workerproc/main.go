// Command workerproc is a worker process of the reliability suite: it works
// queue "work" until SIGTERM (a graceful shutdown) or SIGKILL (the test
// killing it at a random moment). Every delivery is logged to table
// handled, with this process's incarnation, so the test can tell which
// re-deliveries followed a holder's death. Each run that returns success is
// recorded first.
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
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
		// Record the successful run before returning it, retrying until
		// the database has it (the suite's accounting: see audit).
		run := strconv.FormatUint(rand.Uint64(), 36)
		for {
			if _, err := pool.Exec(context.WithoutCancel(ctx), "INSERT INTO handled (queue, job_id, attempt, instance, run) VALUES ('work_queue', $1, $2, $3, $4) ON CONFLICT DO NOTHING",
				job.ID, job.Attempt, *instance, run); err == nil {
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
	}, queue.Node(*node), queue.Concurrency(*concurrency), queue.PollInterval(100*time.Millisecond),
		queue.ShutdownTimeout(5*time.Second), queue.Logger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
