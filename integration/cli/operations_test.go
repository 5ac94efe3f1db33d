package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/integration/e2e/mysql/myjobs"
	"github.com/queuegen/queuegen/integration/e2e/payload"
	"github.com/queuegen/queuegen/internal/cli"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/internal/pgtest"
)

// The commands' tests that need generated code live here, beside the
// e2e fixture whose trees they use; the others are in internal/cli.

func TestMain(m *testing.M) { os.Exit(pgtest.RunMain(m)) }

// run runs the queuegen command line with args.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// migratedURL is a fresh PostgreSQL database that queuegen migrate up
// migrated with the e2e spec's queues.
func migratedURL(t *testing.T) string {
	t.Helper()
	url := pgtest.URL(t)
	if code, out, errs := run(t, "migrate", "up", "--db", url, "-f", "../e2e/queuegen.yaml"); code != 0 {
		t.Fatalf("migrate: %s%s", out, errs)
	}
	return url
}

// mysqlMigrated is the address of a fresh MySQL database with the e2e
// MySQL spec's migrations applied.
func mysqlMigrated(t *testing.T) string {
	t.Helper()
	db := dbtest.New(t, dburl.MySQL)
	m, err := migrate.Open(db.Address, "../e2e/mysql/db/migrations")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(context.Background(), io.Discard); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db.Address
}

// sqlOpen is a database/sql handle on address, closed when the test ends.
func sqlOpen(t *testing.T, address string) *sql.DB {
	t.Helper()
	parsed, err := dburl.Parse(address)
	if err != nil {
		t.Fatal(err)
	}
	db, err := parsed.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestOperationsBesideAGeneratedClaim: a job the generated code of either
// engine claimed in transaction mode, its transaction open, is running in
// stats and skipped by the actions; once its worker completes it, it is
// succeeded.
func TestOperationsBesideAGeneratedClaim(t *testing.T) {
	for _, engine := range dbtest.Engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var url string
			var held int64
			var complete func() error
			switch engine {
			case dburl.PostgreSQL:
				url = migratedURL(t)
				pool, err := pgxpool.New(ctx, url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pool.Close)
				q := jobs.NewTxtaskQueue(pool)
				for _, n := range []int{1, 2} {
					if _, err := q.Push(ctx, payload.Task{Name: "t", N: n}); err != nil {
						t.Fatal(err)
					}
				}
				tx, err := pool.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { tx.Rollback(ctx) })
				claimed, err := q.Claim(ctx, tx, 1)
				if err != nil || len(claimed) != 1 {
					t.Fatalf("claim = %v, %v", claimed, err)
				}
				held = claimed[0].ID
				complete = func() error {
					if err := q.Complete(ctx, tx, claimed[0]); err != nil {
						return err
					}
					return tx.Commit(ctx)
				}
			case dburl.MySQL:
				url = mysqlMigrated(t)
				db := sqlOpen(t, url)
				q := myjobs.NewTxtaskQueue(db)
				for _, n := range []int{1, 2} {
					if _, err := q.Push(ctx, payload.Task{Name: "t", N: n}); err != nil {
						t.Fatal(err)
					}
				}
				tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { tx.Rollback() })
				claimed, err := q.Claim(ctx, tx, 1)
				if err != nil || len(claimed) != 1 {
					t.Fatalf("claim = %v, %v", claimed, err)
				}
				held = claimed[0].ID
				complete = func() error {
					if err := q.Complete(ctx, tx, claimed[0]); err != nil {
						return err
					}
					return tx.Commit()
				}
			}
			txtask := func() map[string]any {
				t.Helper()
				code, out, errs := run(t, "stats", "--db", url, "--json")
				var stats []map[string]any
				if code != 0 || json.Unmarshal([]byte(out), &stats) != nil {
					t.Fatalf("stats --json = %d:\n%s%s", code, out, errs)
				}
				for _, s := range stats {
					if s["queue"] == "txtask" {
						return s
					}
				}
				t.Fatalf("no queue txtask in stats:\n%s", out)
				return nil
			}
			if s := txtask(); s["ready"] != 1.0 || s["running"] != 1.0 || s["succeeded"] != 0.0 {
				t.Errorf("txtask stats with one job claimed = %v; want 1 ready, 1 running", s)
			}
			code, out, errs := run(t, "cancel", "--db", url, "--queue", "txtask", "--id", itoa(held))
			if code != 1 || out != "cancelled 0 jobs of queue txtask\nskipped 1 job that a transaction in progress holds (a transaction-mode worker working them, or a long transaction): "+itoa(held)+"; run again once it ends\n" ||
				errs != "queuegen cancel: cancelled 0 of 1 matching job; 1 could not be cancelled (see above)\n" {
				t.Errorf("cancel of the claimed job = %d:\n%s%s", code, out, errs)
			}
			if err := complete(); err != nil {
				t.Fatal(err)
			}
			if s := txtask(); s["ready"] != 1.0 || s["running"] != 0.0 || s["succeeded"] != 1.0 || s["claims_per_second"].(float64) <= 0 {
				t.Errorf("txtask stats once the job is done = %v; want 1 ready, 1 succeeded", s)
			}
			code, _, errs = run(t, "cancel", "--db", url, "--queue", "txtask", "--id", itoa(held))
			if code != 1 || errs != "queuegen cancel: job "+itoa(held)+" of queue txtask is succeeded; cancel applies to unfinished jobs (available, scheduled, retrying, running and expired)\n" {
				t.Errorf("cancel of the completed job = %d: %q", code, errs)
			}
		})
	}
}
