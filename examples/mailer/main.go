// Command mailer is queuegen's example: a small mail service. It applies
// its queue migrations, pushes a few emails, receipts and a statement job,
// and works them with the runtime: lease-mode workers for emails and for
// receipts (taken from each account in turn, within per-account and global
// limits) and a transaction-mode worker for statements, woken by
// LISTEN/NOTIFY, with
// maintenance, a periodic job scheduler, and hooks wired to OpenTelemetry
// metrics (printed at exit).
//
//	go run ./examples/mailer -db postgres://localhost:5432/mailer
package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/queuegen/queuegen/examples/mailer/jobs"
	"github.com/queuegen/queuegen/queue"
	"github.com/queuegen/queuegen/queue/queuepgx"
)

//go:embed db/migrations/*.sql
var migrations embed.FS

func main() {
	db := flag.String("db", os.Getenv("DATABASE_URL"), "PostgreSQL URL")
	flag.Parse()
	if err := run(context.Background(), *db); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, url string) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	// Push: three emails (one deduped by its unique key) and a statement.
	emails := jobs.NewEmailQueue(pool)
	for i, to := range []string{"ada@example.com", "grace@example.com", "ada@example.com"} {
		res, err := emails.Push(ctx, jobs.EmailPayload{TenantID: 1, Recipient: to, Subject: "Welcome", Body: "Hello!"},
			queue.UniqueKey("welcome:"+to), queue.Priority(int16(i)))
		if err != nil {
			return err
		}
		if res.Duplicate {
			fmt.Printf("email to %s already queued\n", to)
			continue
		}
		fmt.Printf("pushed email %d to %s\n", res.ID, to)
	}
	// Receipts: account 7's burst of five is pushed before account 9's
	// one, and still account 9's is among the first posted.
	receipts := jobs.NewReceiptQueue(pool)
	var burst []jobs.ReceiptPayload
	for i := range 5 {
		burst = append(burst, jobs.ReceiptPayload{AccountID: 7, Webhook: "https://a7.example.com/hook", Email: fmt.Sprint("msg-", i)})
	}
	if _, err := receipts.PushMany(ctx, burst); err != nil {
		return err
	}
	if _, err := receipts.Push(ctx, jobs.ReceiptPayload{AccountID: 9, Webhook: "https://a9.example.com/hook", Email: "msg-0"}); err != nil {
		return err
	}
	statements := jobs.NewStatementQueue(pool)
	if _, err := statements.Push(ctx, jobs.StatementPayload{AccountID: 42, Month: "2026-10-01"}); err != nil {
		return err
	}

	// Work: the runtime pieces a service runs, until the demo's jobs are done.
	reader := sdkmetric.NewManualReader()
	hooks := otelHooks(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("mailer"))
	listener := queuepgx.NewListener(pool, logger)
	defer listener.Close()
	common := []queue.WorkerOption{queue.WithListener(listener), queue.WithHooks(hooks), queue.Logger(logger)}
	host, _ := os.Hostname()

	emailWorker := emails.Worker(send, append(common, queue.Node(host), queue.Concurrency(4))...)
	// Room for 20 at once, but the limits let 2 of account 7 run.
	receiptWorker := receipts.Worker(post, append(common, queue.Node(host), queue.Concurrency(20))...)
	statementWorker := statements.Worker(render, append(common, queue.Concurrency(2))...)
	maintainer := queue.NewMaintainer([]queue.Maintained{emails, receipts, statements}, queue.MaintainerLogger(logger))
	scheduler := queue.NewScheduler(statements.PeriodicJobs(), logger)

	workCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, r := range []interface{ Run(context.Context) error }{emailWorker, receiptWorker, statementWorker, maintainer, scheduler} {
		wg.Go(func() {
			if err := r.Run(workCtx); err != nil {
				logger.Error("stopped", "err", err)
			}
		})
	}
	err = waitDone(ctx, pool, 30*time.Second)
	stop() // graceful: running jobs finish, pending completions are flushed
	wg.Wait()
	if err != nil {
		return err
	}
	return printMetrics(ctx, reader, os.Stdout)
}

// send is the email handler: outside any transaction, under a lease.
func send(ctx context.Context, job *queue.Job[jobs.EmailPayload]) error {
	p := job.Payload
	if p.Recipient == "" {
		return queue.Discard(errors.New("no recipient"))
	}
	time.Sleep(time.Millisecond) // an SMTP call would go here
	fmt.Printf("sent email %d to %s (attempt %d)\n", job.ID, p.Recipient, job.Attempt)
	return nil
}

// post is the receipt handler: a call to the account's webhook would go
// here; the queue's limits keep at most 2 such calls per account running.
func post(ctx context.Context, job *queue.Job[jobs.ReceiptPayload]) error {
	time.Sleep(10 * time.Millisecond)
	fmt.Printf("posted receipt of %s to account %d\n", job.Payload.Email, job.Payload.AccountID)
	return nil
}

// render is the statement handler: its writes (here none) commit with the
// job's completion.
func render(ctx context.Context, tx pgx.Tx, job *queue.Job[jobs.StatementPayload]) error {
	fmt.Printf("rendered statement for account %d, %s\n", job.Payload.AccountID, job.Payload.Month)
	return nil
}

// waitDone waits until no email or receipt is left and the statement has
// succeeded.
func waitDone(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var left int
		err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM email_queue) + (SELECT count(*) FROM receipt_queue)
     + (SELECT count(*) FROM statement_queue WHERE state <> 'succeeded')`).Scan(&left)
		if err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d jobs still not done after %s", left, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// migrate applies the embedded queue migrations with goose, as an
// application would at start-up (or run queuegen migrate up instead).
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	dir, err := fs.Sub(migrations, "db/migrations")
	if err != nil {
		return err
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, dir, goose.WithTableName(jobs.MigrationsTable))
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}
