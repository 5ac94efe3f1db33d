// Command mailer-mysql is queuegen's example on MySQL and MariaDB: the mail
// service of ../mailer, generated with engine: mysql. It applies its queue
// migrations, pushes a few emails, receipts and a statement job, and works
// them with the runtime: lease-mode workers for emails and for receipts
// (taken from each account in turn) and a transaction-mode worker for
// statements, with maintenance and a periodic job scheduler. MySQL has
// no LISTEN/NOTIFY: the workers poll, and a push made by this process
// wakes them at once.
//
//	go run ./examples/mailer-mysql -db 'root@tcp(127.0.0.1:3306)/mailer'
//
// The address is a go-sql-driver/mysql DSN; the example sets what the
// generated code needs of the connection (parseTime, UTC,
// interpolateParams), as queuegen's own commands do.
package main

import (
	"context"
	"database/sql"
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

	"github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3"

	"github.com/queuegen/queuegen/examples/mailer-mysql/jobs"
	"github.com/queuegen/queuegen/queue"
)

//go:embed db/migrations/*.sql
var migrations embed.FS

func main() {
	dsn := flag.String("db", os.Getenv("DATABASE_URL"), "MySQL DSN: user:password@tcp(host:3306)/database")
	flag.Parse()
	if err := run(context.Background(), *dsn); err != nil {
		log.Fatal(err)
	}
}

// open connects with what the generated code needs: DATETIME columns read
// as time.Time in UTC (every time queuegen writes is UTC), and arguments
// interpolated into the statement (one round trip, no server-side
// prepare).
func open(address string) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(address)
	if err != nil {
		return nil, err
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

func run(ctx context.Context, address string) error {
	db, err := open(address)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := migrate(ctx, db); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	// Push: three emails (one deduped by its unique key) and a statement.
	emails := jobs.NewEmailQueue(db)
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
	receipts := jobs.NewReceiptQueue(db)
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
	statements := jobs.NewStatementQueue(db)
	if _, err := statements.Push(ctx, jobs.StatementPayload{AccountID: 42, Month: "2026-10-01"}); err != nil {
		return err
	}

	// Work: the runtime pieces a service runs, until the demo's jobs are done.
	host, _ := os.Hostname()
	emailWorker := emails.Worker(send, queue.Node(host), queue.Concurrency(4), queue.Logger(logger))
	// A claim of 2 takes one receipt of each account with due receipts.
	receiptWorker := receipts.Worker(post, queue.Node(host), queue.Concurrency(2), queue.Logger(logger))
	statementWorker := statements.Worker(render, queue.Concurrency(2), queue.Logger(logger))
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
	err = waitDone(ctx, db, 30*time.Second)
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
	time.Sleep(time.Millisecond)
	fmt.Printf("posted receipt of %s to account %d\n", job.Payload.Email, job.Payload.AccountID)
	return nil
}

// render is the statement handler: its writes through tx commit with the
// job's completion, and a rollback returns the job to the queue.
func render(ctx context.Context, tx *sql.Tx, job *queue.Job[jobs.StatementPayload]) error {
	fmt.Printf("rendered statement for account %d, %s\n", job.Payload.AccountID, job.Payload.Month)
	return nil
}

// waitDone waits until no email or receipt is left and the statement has
// succeeded.
func waitDone(ctx context.Context, db *sql.DB, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var left int
		err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM email_queue) + (SELECT COUNT(*) FROM receipt_queue)
    + (SELECT COUNT(*) FROM statement_queue WHERE state <> 'succeeded')`).Scan(&left)
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
func migrate(ctx context.Context, db *sql.DB) error {
	dir, err := fs.Sub(migrations, "db/migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectMySQL, db, dir, goose.WithTableName(jobs.MigrationsTable))
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}
