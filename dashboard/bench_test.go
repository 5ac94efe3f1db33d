package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/queuegen/queuegen/dashboard"
	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
)

// BenchmarkPages measures the server time of the overview, job lists (all,
// filtered, deep), a job's page and the Nodes page with 1,000,000 jobs in
// queue email (990,000 due, the rest dead; and 1,000 running, leased to ten
// nodes, five of them stale), on each engine of the run: go test
// ./dashboard -run '^$' -bench Pages -benchtime 20x. Seeding takes about
// 15 s on PostgreSQL and a minute on MariaDB.
func BenchmarkPages(b *testing.B) {
	for _, engine := range dbtest.ThisRun() {
		b.Run(engine, func(b *testing.B) {
			s := newBenchSite(b, engine)
			for _, path := range []string{"/", "/fragments/queues", "/queues/email", "/queues/email?state=available",
				"/queues/email?state=dead", "/queues/email?before=500000", "/queues/email/jobs/500000", "/nodes"} {
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
		})
	}
}

// benchSeed fills email_queue with 1,000,000 jobs, every 100th dead, in
// one statement per engine (MariaDB's seq_1_to_1000000 is its sequence
// engine's table of those numbers), and the Nodes page's work: 1,000
// running jobs leased to ten nodes, five of them stale (their 500 leases
// listed); then it refreshes the planner's statistics.
var benchSeed = map[string][]string{
	dburl.PostgreSQL: {`INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, state, finished_at, errors)
SELECT 'user' || g || '@example.com', 'Welcome', 'Hello', g % 100, 8,
       CASE WHEN g % 100 = 0 THEN 'dead' ELSE 'available' END, CASE WHEN g % 100 = 0 THEN now() END,
       CASE WHEN g % 100 = 0 THEN '{"smtp: 550"}'::text[] ELSE '{}' END
FROM generate_series(1, 1000000) g`,
		`INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, state, attempt, locked_by, locked_until, attempted_at)
SELECT 'busy' || g || '@example.com', 'Welcome', 'Hello', g % 100, 8, 'running', 1, 'node-' || (g % 10), now() + interval '1 minute', now()
FROM generate_series(1, 1000) g`,
		`INSERT INTO queuegen_nodes (node, queue, concurrency, running, host, pid, started_at, heartbeat_at, heartbeat_ms)
SELECT 'node-' || n, 'email', 100, 100, 'host', n, now(), CASE WHEN n < 5 THEN now() ELSE now() - interval '1 hour' END, 5000
FROM generate_series(0, 9) n`,
		"VACUUM ANALYZE email_queue"},
	dburl.MySQL: {`INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, state, finished_at, errors, run_after, created_at)
SELECT CONCAT('user', seq, '@example.com'), 'Welcome', 'Hello', seq % 100, 8,
       IF(seq % 100 = 0, 'dead', 'available'), IF(seq % 100 = 0, UTC_TIMESTAMP(6), NULL),
       IF(seq % 100 = 0, JSON_ARRAY('smtp: 550'), JSON_ARRAY()), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)
FROM seq_1_to_1000000`,
		`INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, state, attempt, locked_by, locked_until, attempted_at, run_after, created_at)
SELECT CONCAT('busy', seq, '@example.com'), 'Welcome', 'Hello', seq % 100, 8, 'running', 1, CONCAT('node-', seq % 10),
       UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)
FROM seq_1_to_1000`,
		`INSERT INTO queuegen_nodes (node, queue, concurrency, running, host, pid, started_at, heartbeat_at, heartbeat_ms)
SELECT CONCAT('node-', seq), 'email', 100, 100, 'host', seq, UTC_TIMESTAMP(6),
       IF(seq < 5, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) - INTERVAL 1 HOUR), 5000
FROM seq_0_to_9`,
		"ANALYZE TABLE email_queue"},
}

func newBenchSite(b *testing.B, engine string) *dashboard.Handler {
	b.Helper()
	db := dbtest.New(b, engine)
	migrateExample(b, db)
	for _, stmt := range benchSeed[engine] {
		if _, err := db.SQL.Exec(stmt); err != nil {
			b.Fatalf("seeding: %v\n%s", err, stmt)
		}
	}
	spec := "../examples/mailer/queuegen.yaml"
	if engine == dburl.MySQL {
		spec = "../examples/mailer-mysql/queuegen.yaml"
	}
	h, err := dashboard.New(context.Background(), db.Address, dashboard.SpecFile(spec))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)
	return h
}
