package ops_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/internal/ops"
	"github.com/queuegen/queuegen/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.RunMain(m)) }

// TestNodes reads the nodes of the example app's database on each engine:
// a node heartbeating, one whose heartbeat is older than StaleBeats
// intervals, a transaction-mode queue's node, and jobs leased to each and
// to a node with no row (its lease expired).
//
// It catches: staleness judged by the wrong threshold (or the wrong
// clock), leases not counted per node and queue, the leases of a live node
// listed as orphaned, those of a stale or unknown node missed, a lease's
// expiry misjudged, and a missing nodes table reported as anything but
// ErrNoNodesTable.
func TestNodes(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.AndCitus(dbtest.ThisRun()) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			db := dbtest.New(t, engine)
			example := "../../examples/mailer"
			now, ago, later := "now()", "now() - interval '10 seconds'", "now() + interval '1 minute'"
			if engine == dburl.MySQL {
				example += "-mysql"
				now, ago, later = "UTC_TIMESTAMP(6)", "UTC_TIMESTAMP(6) - INTERVAL 10 SECOND", "UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE"
			}
			var opts []migrate.Option
			if engine == dbtest.Citus {
				// examples/mailer-citus: every queue distributed, in lease
				// mode (statement too), in the test's own schema.
				example += "-citus"
				opts = append(opts, migrate.Schema(db.Schema))
			}
			m, err := migrate.Open(db.Address, example+"/db/migrations", opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ctx := context.Background()
			if err := m.Up(ctx, io.Discard); err != nil {
				t.Fatal(err)
			}
			node := func(name, queue, beat string) string {
				return fmt.Sprintf(`INSERT INTO queuegen_nodes (node, queue, concurrency, running, host, pid, started_at, heartbeat_at, heartbeat_ms)
VALUES ('%s', '%s', 4, 1, 'h1', 42, %s, %s, 1000)`, name, queue, ago, beat)
			}
			job := func(holder, until string) string {
				return fmt.Sprintf(`INSERT INTO email_queue (recipient, subject, body, tenant_id, max_attempts, state, attempt, locked_by, locked_until, attempted_at, run_after, created_at)
VALUES ('%s@example.com', 'Hi', 'x', 1, 8, 'running', 1, '%s', %s, %s, %s, %s)`, holder, holder, until, now, now, now)
			}
			for _, stmt := range []string{
				node("alive", "email", now), node("gone", "email", ago), node("tx", "statement", now),
				job("alive", later), job("alive", later), job("gone", later), job("ghost", ago),
			} {
				if engine == dbtest.Citus {
					stmt = dbtest.CitusInsert(stmt)
				}
				if _, err := db.SQL.Exec(stmt); err != nil {
					t.Fatalf("%v\n%s", err, stmt)
				}
			}
			parsed, err := dburl.Parse(db.Address)
			if err != nil {
				t.Fatal(err)
			}
			schema := ""
			if parsed.HasSchemas() {
				schema = "public"
			}
			if db.Schema != "" {
				schema = db.Schema
			}
			c, err := ops.Open(ctx, parsed, schema)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r, err := c.Nodes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range r.Nodes {
				got = append(got, fmt.Sprintf("%s %s %s held=%d stale=%v every=%v running=%d/%d", n.Node, n.Queue, n.Mode, n.Held, n.Stale, n.Every, n.Running, n.Concurrency))
			}
			want := []string{
				"alive email lease held=2 stale=false every=1s running=1/4",
				"gone email lease held=1 stale=true every=1s running=1/4",
				"tx statement transaction held=0 stale=false every=1s running=1/4",
			}
			if engine == dbtest.Citus {
				want[2] = "tx statement lease held=0 stale=false every=1s running=1/4"
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("nodes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			got = nil
			for _, l := range r.Leases {
				got = append(got, fmt.Sprintf("%s %s known=%v expired=%v attempt=%d", l.Queue, l.Node, l.Known, l.Expired, l.Attempt))
			}
			want = []string{"email gone known=true expired=false attempt=1", "email ghost known=false expired=true attempt=1"}
			if strings.Join(got, "\n") != strings.Join(want, "\n") || r.LeasesTotal != 2 {
				t.Errorf("leases (%d in all):\n%s\nwant (2 in all)\n%s", r.LeasesTotal, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}

			if _, err := db.SQL.Exec("DROP TABLE queuegen_nodes"); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Nodes(ctx); !errors.Is(err, ops.ErrNoNodesTable) {
				t.Errorf("without the nodes table: %v, want ErrNoNodesTable", err)
			}
		})
	}
}
