package e2e_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/internal/pgtest"
	"github.com/queuegen/queuegen/queue"
	"github.com/queuegen/queuegen/queue/queuepgx"
)

// PostgreSQL's wake-up by LISTEN/NOTIFY (MySQL has none: its workers poll,
// and pushes of the same process wake them, TestWorkerWakesOnLocalPush).

// TestWorkerWakesOnNotifyAndSurvivesAKilledListener: with polling
// effectively off, a push wakes the worker through LISTEN/NOTIFY; after
// the listener's connection is killed, it reconnects and pushes still
// arrive.
func TestWorkerWakesOnNotifyAndSurvivesAKilledListener(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewEmailQueue(db)
	// The listener's connection goes to the server itself: through a
	// transaction-mode pooler LISTEN cannot work.
	l := queuepgx.NewListenerURL(pgtest.Direct(db.Config().ConnString()), quiet)
	defer l.Close()
	handled := make(chan string, 10)
	runWorker(t, q.Worker(func(_ context.Context, job *queue.Job[jobs.EmailPayload]) error {
		handled <- job.Payload.Recipient
		return nil
	}, queue.PollInterval(time.Hour), queue.WithListener(l), queue.Logger(quiet)))
	listening := func() bool {
		return pgCount(t, db, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'queuegen-listener' AND datname = current_database() AND state = 'idle'") == 1
	}
	eventually(t, 30*time.Second, "the listener", listening)
	// Pushed by another program (plain SQL): only the database's
	// notification can wake the worker, not a push of this process.
	push := func(name string) {
		if _, err := db.Exec(ctx, "INSERT INTO email_queue (recipient, max_attempts) VALUES ($1, 3)", name); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-handled:
			if got != name {
				t.Fatalf("handled %q, want %q", got, name)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s was not handled: the push did not wake the worker (polling is hourly)", name)
		}
	}
	push("first")
	if pgCount(t, db, "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'queuegen-listener' AND datname = current_database()) k") != 1 {
		t.Fatal("no listener connection to kill")
	}
	eventually(t, 30*time.Second, "the listener to reconnect", listening)
	push("after reconnect")
}

// TestListenerBehindPoolerSaysSo: through a transaction-mode pooler a
// LISTEN succeeds but nothing arrives; the listener notices (it notifies
// itself and waits) and says what to do, rather than leaving the workers
// to poll in silence.
func TestListenerBehindPoolerSaysSo(t *testing.T) {
	t.Parallel()
	url := pgtest.Pooled(t, migratedURL(t))
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	l := queuepgx.NewListenerURL(url, logger)
	defer l.Close()
	l.Subscribe("queuegen_email_queue", make(chan struct{}, 1))
	eventually(t, 30*time.Second, "the listener's warning", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(logs.String(), "does not receive notifications") && strings.Contains(logs.String(), "NewListenerURL")
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
