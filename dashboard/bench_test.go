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
// lists with 1,000,000 jobs in queue email (PostgreSQL; 990,000 due, the
// rest dead): run with go test ./dashboard -run '^$' -bench Pages
// -benchtime 20x. Seeding takes about 15 s.
func BenchmarkPages(b *testing.B) {
	s := newBenchSite(b)
	for _, path := range []string{"/", "/fragments/queues", "/queues/email", "/queues/email?state=available",
		"/queues/email?state=dead", "/queues/email?before=500000"} {
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
