package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// EnvCitusURL is the environment variable naming the coordinator of a
// Citus cluster (postgres://user@host:port/db, a superuser in a database
// where the citus extension is created and the workers are added) that
// the suites of distributed queues run on. CI has no cluster and does not
// select those tests; run on a machine with one, they run when it is set.
const EnvCitusURL = "QUEUEGEN_CITUS_URL"

const citusHowTo = "set " + EnvCitusURL + "=postgres://user@host:port/db naming a Citus coordinator " +
	"(a superuser, in a database with CREATE EXTENSION citus and its workers added with citus_add_node); " +
	"the README's \"Running on Citus\" says how to run a cluster. CI cannot run these tests and does not select them"

// citus is the coordinator of EnvCitusURL, checked once per test process.
var citus struct {
	once sync.Once
	url  string
	err  error
}

// CitusConfigured reports whether EnvCitusURL is set.
func CitusConfigured() bool { return strings.TrimSpace(os.Getenv(EnvCitusURL)) != "" }

// citusCoordinator checks, once, that EnvCitusURL names a Citus coordinator
// with at least one active worker, or says why not.
func citusCoordinator() (string, error) {
	c := &citus
	c.once.Do(func() {
		u := strings.TrimSpace(os.Getenv(EnvCitusURL))
		if u == "" {
			c.err = fmt.Errorf("no Citus cluster for this test: %s", citusHowTo)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			c.err = fmt.Errorf("no Citus coordinator at $%s (%s): %v; %s", EnvCitusURL, redact(u), err, citusHowTo)
			return
		}
		defer conn.Close(context.Background())
		var version string
		var workers int
		if err := conn.QueryRow(ctx, `SELECT citus_version(), (SELECT count(*) FROM citus_get_active_worker_nodes())`).Scan(&version, &workers); err != nil {
			c.err = fmt.Errorf("$%s (%s) is not a Citus coordinator: %v; %s", EnvCitusURL, redact(u), err, citusHowTo)
			return
		}
		if workers == 0 {
			c.err = fmt.Errorf("the Citus coordinator at $%s (%s) has no active worker node: add them with citus_add_node", EnvCitusURL, redact(u))
			return
		}
		c.url = u
	})
	return c.url, c.err
}

// CitusURL gives the test a schema of its own on the Citus cluster of
// EnvCitusURL and returns the coordinator's URL with search_path set to
// it, so that every table the test's migrations create, distribute or
// make reference tables lands there; the schema is dropped, on every
// node, when the test ends. A schema, not a database: a database on a
// cluster needs the extension and the workers added in it on every node.
// CitusURL fails the test, saying how to provide a cluster, when there
// is none. It returns the schema's name too, for migrate.Schema (the
// migrations' version table goes there).
func CitusURL(t testing.TB) (dbURL, schemaName string) {
	t.Helper()
	coordinator, err := citusCoordinator()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	name, err := databaseName(t.Name())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, coordinator)
	if err != nil {
		t.Fatalf("pgtest: connect to the Citus coordinator %s: %v", redact(coordinator), err)
	}
	defer conn.Close(context.Background())
	schema := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: create schema %s on the Citus coordinator %s: %v", name, redact(coordinator), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		conn, err := pgx.Connect(ctx, coordinator)
		if err != nil {
			t.Errorf("pgtest: drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s on the Citus coordinator %s: %v", name, redact(coordinator), err)
		}
	})
	u, err := url.Parse(coordinator)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String(), name
}
