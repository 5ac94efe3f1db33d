// Command mailer-citus is queuegen's example on a Citus cluster: the mail
// service of ../mailer with every queue distributed over the cluster's
// nodes by bucket. It pushes a few emails (one deduped by its unique key),
// a burst of receipts in one COPY and a statement job, and works them with
// the runtime: lease-mode workers woken by LISTEN/NOTIFY on the
// coordinator, maintenance and a periodic job scheduler. Apply the
// migrations first (queuegen migrate up); connect to the coordinator.
//
//	go run ./examples/mailer-citus -db "$QUEUEGEN_CITUS_URL"
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/examples/mailer-citus/jobs"
	"github.com/queuegen/queuegen/queue"
	"github.com/queuegen/queuegen/queue/queuepgx"
)

func main() {
	db := flag.String("db", os.Getenv("QUEUEGEN_CITUS_URL"), "URL of the Citus coordinator")
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
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	// Push: three emails, one deduped by its unique key (the key's hash
	// picks its bucket, whose unique index holds it).
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
		fmt.Printf("pushed email %d to %s (bucket %d)\n", res.ID, to, res.ID%1024)
	}
	// Receipts: a burst in one COPY, spread over the buckets in turn.
	receipts := jobs.NewReceiptQueue(pool)
	var burst []jobs.ReceiptPayload
	for i := range 20 {
		burst = append(burst, jobs.ReceiptPayload{AccountID: int64(7 + i%3), Webhook: "https://example.com/hook", Email: fmt.Sprint("msg-", i)})
	}
	if _, err := receipts.PushMany(ctx, burst); err != nil {
		return err
	}
	statements := jobs.NewStatementQueue(pool)
	if _, err := statements.Push(ctx, jobs.StatementPayload{AccountID: 42, Month: "2026-10-01"}); err != nil {
		return err
	}

	// Work: the runtime pieces a service runs, until the demo's jobs are done.
	listener := queuepgx.NewListener(pool, logger)
	defer listener.Close()
	host, _ := os.Hostname()
	common := []queue.WorkerOption{queue.WithListener(listener), queue.Logger(logger), queue.Node(host)}
	emailWorker := emails.Worker(send, append(common, queue.Concurrency(4))...)
	receiptWorker := receipts.Worker(post, append(common, queue.Concurrency(8))...)
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
	return err
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
// here.
func post(ctx context.Context, job *queue.Job[jobs.ReceiptPayload]) error {
	time.Sleep(10 * time.Millisecond)
	fmt.Printf("posted receipt of %s to account %d (bucket %d)\n", job.Payload.Email, job.Payload.AccountID, job.ID%1024)
	return nil
}

// render is the statement handler, under a lease.
func render(ctx context.Context, job *queue.Job[jobs.StatementPayload]) error {
	fmt.Printf("rendered statement for account %d, %s\n", job.Payload.AccountID, job.Payload.Month)
	return nil
}

// waitDone waits until no email or receipt is left and the statement has
// succeeded: each count is a multi-shard read.
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
