package cli_test

import (
	"strings"
	"testing"
)

// TestSQLServerRefused: the commands that work through internal/ops (the
// operations commands, ui) and bench refuse a SQL Server URL at once,
// before connecting, and say which commands take one.
func TestSQLServerRefused(t *testing.T) {
	const db = "sqlserver://sa:s3cret@127.0.0.1:1?database=app"
	for _, cmd := range [][]string{
		{"stats"},
		{"jobs", "--queue", "q"},
		{"retry", "--queue", "q", "--id", "1"},
		{"cancel", "--queue", "q", "--id", "1"},
		{"purge", "--queue", "q", "--state", "dead", "--yes"},
		{"pause", "--queue", "q"},
		{"resume", "--queue", "q"},
		{"ui"},
		{"bench"},
	} {
		code, out, errs := run(t, append(cmd, "--db", db)...)
		want := "queuegen " + cmd[0] + ": SQL Server is not supported by the operations commands, ui and bench yet; generate, check and migrate support it\n"
		if code != 1 || out != "" || errs != want {
			t.Errorf("%v with a sqlserver:// URL = %d, %q, %q; want 1 and %q", cmd, code, out, errs, want)
		}
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
