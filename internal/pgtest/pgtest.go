// Package pgtest gives each test its own fresh PostgreSQL database on a real
// server, so that tests in many packages can run in parallel without
// interfering with each other.
//
// The server is resolved once per test process, in this order:
//
//  1. If the environment variable QUEUEGEN_TEST_DATABASE_URL is set, it is
//     used as the admin URL. The role it names must be allowed to
//     CREATE DATABASE.
//  2. Otherwise a PostgreSQL server on 127.0.0.1:5432 is tried, first as user
//     postgres and then as user root (trust authentication), with a short
//     connect timeout. Setting QUEUEGEN_TEST_NO_LOCALHOST=1 skips this step;
//     it is a testing knob used to exercise step 3.
//  3. Otherwise, if the PostgreSQL server binaries are installed (initdb and
//     pg_ctl on PATH, else in the highest-versioned /usr/lib/postgresql/*/bin),
//     a throwaway cluster is created in a temporary directory and started on a
//     free port of 127.0.0.1. When the process runs as root, the cluster runs
//     as user postgres (or nobody), because initdb and pg_ctl refuse to run as
//     root.
//  4. Otherwise every call fails the test with a message explaining how to
//     provide a server. Tests never skip for lack of a database.
//
// A throwaway cluster is stopped and removed by [RunMain], which packages
// should call from their TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.RunMain(m)) }
//
// If RunMain is not used, a throwaway cluster keeps running after the tests
// finish and its directory is left for the operating system's temporary-file
// cleaner.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EnvDatabaseURL is the environment variable that, when set, names the admin
// URL (postgres://user@host:port/db) of the server to create test databases
// on. Its role must be allowed to CREATE DATABASE.
const EnvDatabaseURL = "QUEUEGEN_TEST_DATABASE_URL"

// EnvNoLocalhost is a testing knob: when this environment variable is set to a
// non-empty value other than "0" or "false", the server on 127.0.0.1:5432 is
// not tried, so a throwaway cluster is started instead (if the server
// binaries are installed).
const EnvNoLocalhost = "QUEUEGEN_TEST_NO_LOCALHOST"

// localhostCandidates are the admin URLs tried in step 2 of server resolution.
var localhostCandidates = []string{
	"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
	"postgres://root@127.0.0.1:5432/postgres?sslmode=disable",
}

const (
	localhostConnectTimeout = 2 * time.Second
	adminTimeout            = 30 * time.Second
	clusterStartTimeout     = 60 * time.Second

	// maxIdentLen is PostgreSQL's NAMEDATALEN-1.
	maxIdentLen = 63
	// suffixBytes random bytes are appended (hex-encoded) to database names.
	suffixBytes = 6
)

const howToProvide = "set " + EnvDatabaseURL + "=postgres://user@host:port/db, " +
	"or start PostgreSQL on 127.0.0.1:5432 " +
	"(pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start), " +
	"or install the server (apt-get install -y postgresql) so a throwaway cluster can be started"

var (
	mu        sync.Mutex
	resolved  bool
	serverURL string
	serverErr error
	cluster   *tempCluster
)

// URL returns a connection URL (postgres://...) for a brand-new, empty
// database created for this test; the database is dropped in t.Cleanup.
// When the tests run through PgBouncer (see RunMainTwice), the URL is the
// pooler's; Direct gives the server's.
// The URL keeps the admin URL's user, host, port and parameters and only
// replaces the database name. URL fails the test (t.Fatal) with a message
// explaining how to provide a database when no server can be found or
// started.
func URL(t testing.TB) string {
	t.Helper()
	admin := ServerURL(t)

	name, err := databaseName(t.Name())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	dbURL, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	if err := createDatabase(ctx, admin, name); err != nil {
		t.Fatalf("pgtest: create database %s on %s: %v", name, redact(admin), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		if err := dropDatabase(ctx, admin, name); err != nil {
			t.Errorf("pgtest: drop database %s on %s: %v", name, redact(admin), err)
		}
	})
	return Route(t, dbURL)
}

// Pool returns a *pgxpool.Pool connected to URL(t), closed in t.Cleanup
// (before the database is dropped). It fails the test if the pool cannot
// reach the database.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	dbURL := URL(t)

	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("pgtest: ping %s: %v", redact(dbURL), err)
	}
	return pool
}

// ServerURL returns the admin URL of the server being used, for tests that
// need to create databases themselves or run pgbench-like tools. The server
// is resolved the same way as for URL (see the package documentation), and
// the test fails with an explanatory message if there is none.
func ServerURL(t testing.TB) string {
	t.Helper()
	u, err := resolve()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// RunMain runs the tests of m and then stops and removes the throwaway
// cluster, if one was started, and returns the exit code of m.Run. Use it
// from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.RunMain(m)) }
func RunMain(m *testing.M) int {
	code := m.Run()
	stopBouncers()

	mu.Lock()
	c := cluster
	cluster = nil
	mu.Unlock()
	if c != nil {
		if err := c.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		}
	}
	return code
}

// resolve finds the admin URL once per process and caches the result.
func resolve() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if !resolved {
		serverURL, serverErr = resolveServer()
		resolved = true
	}
	return serverURL, serverErr
}

// resolveServer implements the resolution order documented on the package.
// It must be called with mu held.
func resolveServer() (string, error) {
	if u := os.Getenv(EnvDatabaseURL); u != "" {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		if err := probe(ctx, u); err != nil {
			return "", fmt.Errorf("%s=%s is not usable (fix or unset it): %v", EnvDatabaseURL, redact(u), err)
		}
		return u, nil
	}

	var tried []string
	if skipLocalhost() {
		tried = append(tried, "127.0.0.1:5432: skipped because "+EnvNoLocalhost+" is set")
	} else {
		for _, u := range localhostCandidates {
			ctx, cancel := context.WithTimeout(context.Background(), localhostConnectTimeout)
			err := probe(ctx, u)
			cancel()
			if err == nil {
				return u, nil
			}
			tried = append(tried, fmt.Sprintf("%s: %v", redact(u), err))
		}
	}

	c, err := startCluster()
	if err == nil {
		cluster = c
		return c.url, nil
	}
	tried = append(tried, "throwaway cluster: "+err.Error())

	return "", fmt.Errorf("no PostgreSQL server: %s\n(tried: %s)", howToProvide, strings.Join(tried, "; "))
}

func skipLocalhost() bool {
	v := strings.TrimSpace(os.Getenv(EnvNoLocalhost))
	if v == "" {
		return false
	}
	if b, err := strconv.ParseBool(v); err == nil {
		return b
	}
	return true
}

// probe connects to the admin URL and checks that its role may create
// databases.
func probe(ctx context.Context, adminURL string) error {
	if _, err := parsePostgresURL(adminURL); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var ok bool
	err = conn.QueryRow(ctx,
		`SELECT rolsuper OR rolcreatedb FROM pg_roles WHERE rolname = current_user`).Scan(&ok)
	if err != nil {
		return fmt.Errorf("check CREATEDB privilege: %w", err)
	}
	if !ok {
		return errors.New("role lacks the CREATEDB privilege")
	}
	return nil
}

func parsePostgresURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return nil, fmt.Errorf("database URL %s: want a postgres:// URL", redact(s))
	}
	return u, nil
}

// withDatabase returns adminURL with its database name replaced by name,
// keeping user, password, host, port and the other parameters.
func withDatabase(adminURL, name string) (string, error) {
	u, err := parsePostgresURL(adminURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	u.RawPath = ""
	if q := u.Query(); q.Has("dbname") {
		q.Del("dbname")
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable URL>"
	}
	return u.Redacted()
}

// databaseName returns a fresh database name for the test named testName:
// qg_<sanitized test name>_<random hex>, at most 63 bytes of [a-z0-9_].
func databaseName(testName string) (string, error) {
	b := make([]byte, suffixBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random database name: %w", err)
	}
	suffix := hex.EncodeToString(b)
	const prefix = "qg_"
	stem := sanitize(testName, maxIdentLen-len(prefix)-1-len(suffix))
	return prefix + stem + "_" + suffix, nil
}

// sanitize lower-cases s, turns every run of characters outside [a-z0-9]
// into a single underscore, trims underscores at both ends, and truncates the
// result to at most limit bytes. It returns "test" (truncated to limit) if
// nothing is left.
func sanitize(s string, limit int) string {
	var b strings.Builder
	underscore := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if underscore && b.Len() > 0 {
				b.WriteByte('_')
			}
			underscore = false
			b.WriteRune(r)
			continue
		}
		underscore = true
	}
	out := b.String()
	if len(out) > limit {
		out = strings.TrimRight(out[:limit], "_")
	}
	if out == "" {
		out = "test"
		if len(out) > limit {
			out = out[:limit]
		}
	}
	return out
}

func createDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())

	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	backoff := 20 * time.Millisecond
	const attempts = 10
	for i := 1; ; i++ {
		_, err = conn.Exec(ctx, sql)
		// 55006 object_in_use: "source database "template1" is being
		// accessed by other users", typical when many tests create
		// databases at the same time.
		if err == nil || i == attempts || !isSQLState(err, "55006") {
			return err
		}
		jitter, _ := randDuration(backoff)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (after %v)", ctx.Err(), err)
		case <-time.After(backoff + jitter):
		}
		backoff = min(2*backoff, time.Second)
	}
}

func dropDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())

	ident := pgx.Identifier{name}.Sanitize()
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
	if err == nil || !isSQLState(err, "42601") {
		return err
	}
	// syntax_error: a server older than PostgreSQL 13 has no WITH (FORCE).
	if _, err := conn.Exec(ctx,
		`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
		name); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident)
	return err
}

func isSQLState(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}

func randDuration(limit time.Duration) (time.Duration, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil || limit <= 0 {
		return 0, err
	}
	var n uint64
	for _, c := range b {
		n = n<<8 | uint64(c)
	}
	return time.Duration(n % uint64(limit)), nil
}
