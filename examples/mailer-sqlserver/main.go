// Command mailer-sqlserver is queuegen's example on SQL Server: the mail
// service of ../mailer, generated with engine: sqlserver. It applies its
// queue migrations, pushes a few emails and a statement job, and works
// them with the runtime: a lease-mode worker for emails and a
// transaction-mode worker for statements, with maintenance and a periodic
// job scheduler. Workers poll, and a push made by this process wakes them
// at once.
//
//	go run ./examples/mailer-sqlserver -db 'sqlserver://sa:password@127.0.0.1:1433?database=mailer'
//
// It compiles and its SQL passes a T-SQL grammar check in queuegen's tests,
// but it has not been run against a server (see the README).
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

	_ "github.com/microsoft/go-mssqldb"
	"github.com/pressly/goose/v3"

	"github.com/queuegen/queuegen/examples/mailer-sqlserver/jobs"
	"github.com/queuegen/queuegen/queue"
)

//go:embed db/migrations/*.sql
var migrations embed.FS

func main() {
	address := flag.String("db", os.Getenv("DATABASE_URL"), "SQL Server URL: sqlserver://user:password@host:1433?database=name")
	flag.Parse()
	if err := run(context.Background(), *address); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, address string) error {
	db, err := sql.Open("sqlserver", address)
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
	statements := jobs.NewStatementQueue(db)
	if _, err := statements.Push(ctx, jobs.StatementPayload{AccountID: 42, Month: "2026-10-01"}); err != nil {
		return err
	}

	// Work: the runtime pieces a service runs, until the demo's jobs are done.
	host, _ := os.Hostname()
	emailWorker := emails.Worker(send, queue.Node(host), queue.Concurrency(4), queue.Logger(logger))
	statementWorker := statements.Worker(render, queue.Concurrency(2), queue.Logger(logger))
	maintainer := queue.NewMaintainer([]queue.Maintained{emails, statements}, queue.MaintainerLogger(logger))
	scheduler := queue.NewScheduler(statements.PeriodicJobs(), logger)

	workCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, r := range []interface{ Run(context.Context) error }{emailWorker, statementWorker, maintainer, scheduler} {
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

// render is the statement handler: its writes through tx commit with the
// job's completion, and a rollback returns the job to the queue.
func render(ctx context.Context, tx *sql.Tx, job *queue.Job[jobs.StatementPayload]) error {
	fmt.Printf("rendered statement for account %d, %s\n", job.Payload.AccountID, job.Payload.Month)
	return nil
}

// waitDone waits until no email is left and the statement has succeeded.
func waitDone(ctx context.Context, db *sql.DB, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var left int
		err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM email_queue) + (SELECT COUNT(*) FROM statement_queue WHERE state <> 'succeeded')`).Scan(&left)
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
	p, err := goose.NewProvider(goose.DialectMSSQL, db, dir, goose.WithTableName(jobs.MigrationsTable))
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}
