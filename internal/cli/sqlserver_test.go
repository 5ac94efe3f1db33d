package cli_test

import (
	"strings"
	"testing"
	"time"
)

// TestSQLServerCommands: the operations commands and ui take a SQL Server
// URL and connect (here to a port nothing listens on): they fail at once,
// saying they cannot connect, without the password. No SQL Server runs
// here, so this is as far as they go.
func TestSQLServerCommands(t *testing.T) {
	const db = "sqlserver://sa:s3cret@127.0.0.1:1?database=app"
	for _, cmd := range [][]string{
		{"stats"},
		{"jobs", "--queue", "q"},
		{"retry", "--queue", "q", "--id", "1"},
		{"cancel", "--queue", "q", "--id", "1"},
		{"purge", "--queue", "q", "--state", "dead", "--yes"},
		{"nodes"},
		{"pause", "--queue", "q"},
		{"resume", "--queue", "q"},
		{"ui"},
	} {
		start := time.Now()
		code, out, errs := run(t, append(cmd, "--db", db)...)
		if code != 1 || out != "" || !strings.Contains(errs, "cannot connect to the database") || strings.Contains(errs, "s3cret") || time.Since(start) > 15*time.Second {
			t.Errorf("%v with an unreachable SQL Server = %d, %q, %q after %s", cmd, code, out, errs, time.Since(start))
		}
	}
}

// TestSQLServerBench: bench takes a SQL Server URL and connects (here to
// a port nothing listens on): it fails at once, saying it cannot connect,
// without the password. No SQL Server runs here, so this is as far as it
// goes (internal/bench's SQL Server tests check its SQL's grammar).
func TestSQLServerBench(t *testing.T) {
	start := time.Now()
	code, out, errs := run(t, "bench", "--workload", "push", "--db", "sqlserver://sa:s3cret@127.0.0.1:1?database=app")
	if code != 1 || out != "" || !strings.HasPrefix(errs, "queuegen bench: cannot connect to the database") || strings.Contains(errs, "s3cret") || time.Since(start) > 15*time.Second {
		t.Errorf("bench with an unreachable SQL Server = %d, %q, %q after %s", code, out, errs, time.Since(start))
	}
}

// TestSQLServerSchemaFlag: --schema names the SQL Server schema (the
// command goes on to connect), as on PostgreSQL.
func TestSQLServerSchemaFlag(t *testing.T) {
	code, _, errs := run(t, "stats", "--db", "sqlserver://sa:s3cret@127.0.0.1:1?database=app", "--schema", "jobs")
	if code != 1 || !strings.Contains(errs, "cannot connect to the database") {
		t.Errorf("stats --schema on SQL Server = %d, %q", code, errs)
	}
}

// TestMigrateTakesSQLServer: migrate is not refused a SQL Server URL: it
// goes on to connect (here to a port nothing listens on).
func TestMigrateTakesSQLServer(t *testing.T) {
	code, _, errs := run(t, "migrate", "up", "--db", "sqlserver://sa:s3cret@127.0.0.1:1?database=app", "-f", "../../integration/e2e/sqlserver/queuegen.yaml")
	if code != 1 || !strings.Contains(errs, "cannot connect to the database") || strings.Contains(errs, "s3cret") {
		t.Errorf("migrate up on an unreachable SQL Server = %d, %q", code, errs)
	}
}
