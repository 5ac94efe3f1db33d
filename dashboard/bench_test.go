package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/dashboard"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/pgtest"
)

// BenchmarkPages measures the server time of the overview and of job
// lists and the Nodes page with 1,000,000 jobs in queue email
// (PostgreSQL; 990,000 due, the rest dead; and 1,000 running, leased to
// ten nodes, five of them stale): run with go test ./dashboard -run '^$' -bench Pages
// -benchtime 20x. Seeding takes about 15 s.
func BenchmarkPages(b *testing.B) {
	s := newBenchSite(b)
	for _, path := range []string{"/", "/fragments/queues", "/queues/email", "/queues/email?state=available",
		"/queues/email?state=dead", "/queues/email?before=500000", "/nodes"} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				w := httptest.NewRecorder()
				s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
				if w.Code != http.StatusOK {
					b.Fatalf("GET %s = %d:\n%s", path, w.Code, w.Body)
				}
			}
		})
	}
}

func newBenchSite(b *testing.B) *dashboard.Handler {
	b.Helper()
	url := pgtest.URL(b)
	migrateExample(b, dburl.PostgreSQL, url)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, state, finished_at, errors)
SELECT 'user' || g || '@example.com', 'Welcome', 'Hello', g % 100, 8,
       CASE WHEN g % 100 = 0 THEN 'dead' ELSE 'available' END, CASE WHEN g % 100 = 0 THEN now() END,
       CASE WHEN g % 100 = 0 THEN '{"smtp: 550"}'::text[] ELSE '{}' END
FROM generate_series(1, 1000000) g`); err != nil {
		b.Fatal(err)
	}
	// The Nodes page's work: 1,000 running jobs leased to ten nodes, five
	// of them stale (their 500 leases listed).
	if _, err := pool.Exec(ctx, `INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, state, attempt, locked_by, locked_until, attempted_at)
SELECT 'busy' || g || '@example.com', 'Welcome', 'Hello', g % 100, 8, 'running', 1, 'node-' || (g % 10), now() + interval '1 minute', now()
FROM generate_series(1, 1000) g`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO queuegen_nodes (node, queue, concurrency, running, host, pid, started_at, heartbeat_at, heartbeat_ms)
SELECT 'node-' || n, 'email', 100, 100, 'host', n, now(), CASE WHEN n < 5 THEN now() ELSE now() - interval '1 hour' END, 5000
FROM generate_series(0, 9) n`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE email_queue"); err != nil {
		b.Fatal(err)
	}
	h, err := dashboard.New(ctx, url, dashboard.SpecFile("../examples/mailer/queuegen.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)
	return h
}
