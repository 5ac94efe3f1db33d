package e2e_test

import (
	"context"
	"io"
	"os"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/internal/pgtest"
)

// TestMain runs the suites, then again through PgBouncer, but for the
// MySQL-only tests, which a PostgreSQL pooler has nothing to do with.
func TestMain(m *testing.M) { os.Exit(pgtest.RunMainTwice(m, "^TestMySQL")) }

// migrated returns a pool on a fresh database with the e2e migrations
// applied by goose.
func migrated(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return poolFor(t, migratedURL(t))
}

// migratedURL is a fresh database with the e2e migrations applied.
func migratedURL(t testing.TB) string {
	t.Helper()
	url := pgtest.URL(t)
	m, err := migrate.Open(url, "db/migrations")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(context.Background(), io.Discard); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	return url
}

// poolFor is a pool on url, closed when the test ends.
func poolFor(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// querySQL returns the SQL sqlc compiled for a query (with $n parameters),
// read from the generated Go file, so tests can EXPLAIN exactly what runs.
func querySQL(t *testing.T, goFile, constName string) string {
	t.Helper()
	src, err := os.ReadFile(goFile)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)const " + constName + " = `(.*?)`").FindSubmatch(src)
	if m == nil {
		t.Fatalf("no const %s in %s", constName, goFile)
	}
	return string(m[1])
}

// pgCount runs a count(*) query on a PostgreSQL pool.
func pgCount(t *testing.T, db *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
