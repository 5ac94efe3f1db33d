// Package dbtest gives a test a fresh database of any of queuegen's
// engines, for the suites that run once per engine: PostgreSQL through
// pgtest, MySQL and MariaDB through mytest, and SQL Server, where
// $QUEUEGEN_SQLSERVER_URL names one, on that server.
package dbtest

import (
	"database/sql"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/mytest"
	"github.com/queuegen/queuegen/internal/pgtest"
)

// Engines are the engines the suites run on in every run, by their spec
// names. SQL Server is not one: it runs only where a server is given (see
// ThisRun).
var Engines = []string{dburl.PostgreSQL, dburl.MySQL}

// ThisRun lists the engines this test process runs its suites on: every
// engine of Engines, but only PostgreSQL in the second run through
// PgBouncer (pgtest.RerunViaPgBouncer), which is about PostgreSQL.
func ThisRun() []string {
	if pgtest.ViaPgBouncer() {
		return []string{dburl.PostgreSQL}
	}
	return Engines
}

// AndSQLServer is engines with SQL Server added when EnvSQLServer names a
// server (and this is not the run through PgBouncer): for the suites that
// SQL Server's generated code has (e2e, the golden migrations). The others
// (the dashboard, the fault suite) have no SQL Server side yet.
func AndSQLServer(engines []string) []string {
	if pgtest.ViaPgBouncer() || strings.TrimSpace(os.Getenv(EnvSQLServer)) == "" {
		return engines
	}
	return slices.Concat(engines, []string{dburl.SQLServer})
}

// DB is a fresh, empty database of one engine, dropped when the test ends.
type DB struct {
	// Engine is its engine's name.
	Engine string
	// Address is its URL (PostgreSQL, SQL Server) or DSN (MySQL), as
	// migrate.Open and the CLI's --db take it.
	Address string
	// SQL is a database/sql handle on it.
	SQL *sql.DB
	// Schema is the schema the test's tables go in, on Citus (the
	// cluster's database is shared; each test has a schema of its own);
	// "" elsewhere.
	Schema string
}

// New creates a database of engine for t. SQL Server's is created on the
// server EnvSQLServer names; without it, the test fails.
func New(t testing.TB, engine string) *DB {
	t.Helper()
	var address, schema string
	switch engine {
	case dburl.PostgreSQL:
		address = pgtest.URL(t)
	case dburl.MySQL:
		address = mytest.DSN(t)
	case dburl.SQLServer:
		address = sqlServerDatabase(t)
	case Citus:
		address, schema = pgtest.CitusURL(t)
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
	return &DB{Engine: engine, Address: address, SQL: h, Schema: schema}
}

// Tables counts the tables the migrations made: every table of the
// database (PostgreSQL: outside the system schemas; SQL Server: but the
// system's own) but goose's version tables.
func (d *DB) Tables(t testing.TB) int {
	t.Helper()
	q := `SELECT count(*) FROM pg_tables WHERE tablename NOT IN ('goose_db_version', 'queuegen_db_version') AND schemaname NOT IN ('pg_catalog', 'information_schema')`
	switch d.Engine {
	case Citus:
		q += ` AND schemaname = current_schema()`
	case dburl.MySQL:
		q = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name NOT IN ('goose_db_version', 'queuegen_db_version')`
	case dburl.SQLServer:
		q = `SELECT COUNT(*) FROM sys.tables WHERE is_ms_shipped = 0 AND name NOT IN ('goose_db_version', 'queuegen_db_version')`
	}
	var n int
	if err := d.SQL.QueryRow(q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
