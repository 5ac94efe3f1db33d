package reliability_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/internal/pgtest"
	"github.com/queuegen/queuegen/internal/reliability/jobs"
	"github.com/queuegen/queuegen/queue"
)

// runWorkers runs n in-process workers of queue work until stop is
// called.
func runWorkers(t *testing.T, pool *pgxpool.Pool, n int, work time.Duration) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	q := jobs.NewWorkQueue(pool)
	for i := range n {
		node := "node-" + string(rune('a'+i))
		w := q.Worker(func(ctx context.Context, job *queue.Job[jobs.WorkPayload]) error {
			time.Sleep(work)
			record(ctx, pool, "work_queue", job.ID, job.Attempt, node)
			return nil
		}, queue.Node(node), queue.Concurrency(8), queue.PollInterval(100*time.Millisecond), queue.Logger(quiet))
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				t.Errorf("worker: %v", err)
			}
		})
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func pushWork(t *testing.T, pool *pgxpool.Pool, total int) {
	t.Helper()
	ps := make([]jobs.WorkPayload, total)
	for i := range ps {
		ps[i] = jobs.WorkPayload{N: int64(i), Kind: "ok"}
	}
	if _, err := jobs.NewWorkQueue(pool).PushMany(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
}

// TestConnectionsTerminated kills every worker connection with
// pg_terminate_backend, again and again, while two workers drain the
// queue: they reconnect and carry on, and completions that fail to be
// written are retried, never dropped.
func TestConnectionsTerminated(t *testing.T) {
	t.Parallel()
	_, pool := prepare(t, "")
	total := scale(4000, 40000)
	pushWork(t, pool, total)
	admin, err := pgxpool.New(context.Background(), pgtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var db string
	pool.QueryRow(context.Background(), "SELECT current_database()").Scan(&db)

	stop := runWorkers(t, pool, 2, 5*time.Millisecond)
	kills := 0
	for unfinished(t, pool) > 0 {
		time.Sleep(150 * time.Millisecond)
		admin.Exec(context.Background(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", db)
		kills++
	}
	if kills < 3 {
		t.Fatalf("only %d rounds of terminations before the queue drained: the scenario tests too little", kills)
	}
	waitFinished(t, pool, "work_queue", 2*time.Minute)
	stop()
	t.Logf("terminated every connection %d times", kills)
	check(t, "terminate-backends", tally(t, pool, "work_queue", total), exactlyOnce)
}

// TestDatabaseRestart restarts the server (pg_ctl restart -m fast) of a
// private cluster twice while two workers drain the queue.
func TestDatabaseRestart(t *testing.T) {
	t.Parallel()
	cluster := pgtest.NewCluster(t)
	_, pool := prepare(t, cluster.URL())
	total := scale(2000, 20000)
	pushWork(t, pool, total)
	stop := runWorkers(t, pool, 2, 5*time.Millisecond)
	for range scale(2, 10) {
		time.Sleep(300 * time.Millisecond)
		if unfinished(t, pool) == 0 {
			t.Fatal("the queue was drained before the restart: the scenario tests nothing")
		}
		cluster.Restart(t)
	}
	waitFinished(t, pool, "work_queue", 2*time.Minute)
	stop()
	check(t, "database-restart", tally(t, pool, "work_queue", total), atLeastOnce)
}

// unfinished counts the work jobs not yet finished, retrying while the
// server is coming back.
func unfinished(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	for range 50 {
		if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM work_queue WHERE state <> 'dead'").Scan(&n); err == nil {
			return n
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the database did not answer")
	return 0
}
