// Command mailer is queuegen's example: it applies its queue migrations,
// pushes a few emails and a statement job, and works them with the
// generated accessors.
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
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/queuegen/queuegen/examples/mailer/jobs"
	"github.com/queuegen/queuegen/queue"
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
	statements := jobs.NewStatementQueue(pool)
	if _, err := statements.Push(ctx, jobs.StatementPayload{AccountID: 42, Month: "2026-10-01"}); err != nil {
		return err
	}

	// Work the emails: claim a batch under a lease, send, complete.
	node, _ := os.Hostname()
	claimed, err := emails.Claim(ctx, node, 10)
	if err != nil {
		return err
	}
	for _, job := range claimed {
		if err := send(job.Payload); err != nil {
			if _, err := emails.Fail(ctx, job, err); err != nil {
				return err
			}
			continue
		}
		if err := emails.Complete(ctx, job); err != nil {
			return err
		}
		fmt.Printf("sent email %d to %s (attempt %d)\n", job.ID, job.Payload.Recipient, job.Attempt)
	}

	// Work the statement inside a transaction: the job and the work it
	// records commit together, or neither does.
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	got, err := statements.Claim(ctx, tx, 1)
	if err != nil {
		return err
	}
	for _, job := range got {
		fmt.Printf("rendered statement for account %d, %s\n", job.Payload.AccountID, job.Payload.Month)
		if err := statements.Complete(ctx, tx, job); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

func send(p jobs.EmailPayload) error {
	if p.Recipient == "" {
		return errors.New("no recipient")
	}
	time.Sleep(time.Millisecond) // an SMTP call would go here
	return nil
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
	p, err := goose.NewProvider(goose.DialectPostgres, db, dir)
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}
