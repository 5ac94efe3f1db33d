// Package dbtest gives a test a fresh database of any of queuegen's
// engines, for the suites that run once per engine: PostgreSQL through
// pgtest, MySQL and MariaDB through mytest.
package dbtest

import (
	"database/sql"
	"testing"

	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/mytest"
	"github.com/queuegen/queuegen/internal/pgtest"
)

// Engines are the engines the suites run on, by their spec names.
var Engines = []string{dburl.PostgreSQL, dburl.MySQL}

// ThisRun lists the engines this test process runs its suites on: every
// engine, but only PostgreSQL in the second run through PgBouncer
// (pgtest.RerunViaPgBouncer), which is about PostgreSQL.
func ThisRun() []string {
	if pgtest.ViaPgBouncer() {
		return []string{dburl.PostgreSQL}
	}
	return Engines
}

// DB is a fresh, empty database of one engine, dropped when the test ends.
type DB struct {
	// Engine is its engine's name.
	Engine string
	// Address is its URL (PostgreSQL) or DSN (MySQL), as migrate.Open and
	// the CLI's --db take it.
	Address string
	// SQL is a database/sql handle on it.
	SQL *sql.DB
}

// New creates a database of engine for t.
func New(t testing.TB, engine string) *DB {
	t.Helper()
	var address string
	switch engine {
	case dburl.PostgreSQL:
		address = pgtest.URL(t)
	case dburl.MySQL:
		address = mytest.DSN(t)
	default:
		t.Fatalf("dbtest: no engine %q", engine)
	}
	parsed, err := dburl.Parse(address)
	if err != nil {
		t.Fatal(err)
	}
	h, err := parsed.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return &DB{Engine: engine, Address: address, SQL: h}
}

// Tables counts the tables the migrations made: every table of the
// database (PostgreSQL: outside the system schemas) but goose's version
// tables.
func (d *DB) Tables(t testing.TB) int {
	t.Helper()
	q := `SELECT count(*) FROM pg_tables WHERE tablename NOT IN ('goose_db_version', 'queuegen_db_version') AND schemaname NOT IN ('pg_catalog', 'information_schema')`
	if d.Engine == dburl.MySQL {
		q = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name NOT IN ('goose_db_version', 'queuegen_db_version')`
	}
	var n int
	if err := d.SQL.QueryRow(q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
