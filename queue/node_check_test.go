package queue_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	myjobs "github.com/queuegen/queuegen/examples/mailer-mysql/jobs"
	pgjobs "github.com/queuegen/queuegen/examples/mailer/jobs"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/queue"
)

// TestWorkerRefusesALongNodeID: a lease worker whose node id is longer than
// the lease column holds returns a *queue.TooLongError from Run at once,
// and claims nothing: the job pushed before stays available (MySQL and
// MariaDB: VARCHAR(255); PostgreSQL's text column holds any id). It catches a worker that starts anyway and logs
// ErrTooLong on every claim, as it did before CheckNode.
func TestWorkerRefusesALongNodeID(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.ThisRun() {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := dbtest.New(t, engine)
			migrateExample(t, engine, db.Address)
			long := strings.Repeat("n", 4000)
			handler := func(context.Context, *queue.Job[pgjobs.EmailPayload]) error { return nil }
			var run func(context.Context) error
			switch engine {
			case dburl.PostgreSQL:
				// locked_by is text: any node id fits, and there is nothing
				// to check.
				pool, err := pgxpool.New(ctx, db.Address)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pool.Close)
				if _, ok := any(pgjobs.NewEmailQueue(pool)).(interface{ CheckNode(string) error }); ok {
					t.Error("PostgreSQL's accessor checks node ids, and its lease column has no limit")
				}
				_ = handler
				return
			case dburl.MySQL:
				q := myjobs.NewEmailQueue(db.SQL)
				if _, err := q.Push(ctx, myjobs.EmailPayload{Recipient: "a@example.com"}); err != nil {
					t.Fatal(err)
				}
				run = q.Worker(func(context.Context, *queue.Job[myjobs.EmailPayload]) error { return nil }, queue.Node(long)).Run
			}
			runCtx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			err := run(runCtx)
			if runCtx.Err() != nil || !errors.Is(err, queue.ErrTooLong) || !strings.Contains(err.Error(), "node id") {
				t.Fatalf("Run with a 4,000-byte node id = %v (timed out: %v), want ErrTooLong naming the node id at once", err, runCtx.Err() != nil)
			}
			var available int
			if err := db.SQL.QueryRow("SELECT count(*) FROM email_queue WHERE state = 'available'").Scan(&available); err != nil {
				t.Fatal(err)
			}
			if available != 1 {
				t.Errorf("%d jobs available after the refused worker, want the 1 pushed", available)
			}
		})
	}
}

// migrateExample applies the example app's migrations of engine at
// address.
func migrateExample(t *testing.T, engine, address string) {
	t.Helper()
	example := "../examples/mailer"
	if engine == dburl.MySQL {
		example += "-mysql"
	}
	m, err := migrate.Open(address, example+"/db/migrations")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(context.Background(), io.Discard); err != nil {
		t.Fatal(err)
	}
}
