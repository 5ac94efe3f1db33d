package generate_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// tsqlCheck finds the offline T-SQL grammar check (tsql-check, beside the
// repository in ../shared), or fails and names how to provide it.
func tsqlCheck(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("QUEUEGEN_TSQL_CHECK"), "../../../shared/tsql-check/tsql-check", "/work/shared/tsql-check/tsql-check"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			abs, _ := filepath.Abs(c)
			return abs
		}
	}
	t.Fatal("no tsql-check: the SQL Server SQL cannot be checked; set QUEUEGEN_TSQL_CHECK to the tsql-check script (shared/tsql-check/tsql-check)")
	return ""
}

// TestSQLServerGrammar passes every SQL Server file queuegen emits — the
// golden case's migrations and queries, the example's, the evolution
// revisions' migrations and the SQL Server e2e package's — through the
// T-SQL grammar (and SQL Server's batch rules) in one call. No SQL Server
// runs here: this is the evidence that SQL Server's parser accepts the
// text, not that the statements run.
func TestSQLServerGrammar(t *testing.T) {
	checker := tsqlCheck(t)
	var files []string
	for _, pattern := range []string{
		"../../testdata/sqlserver/db/*/*.sql",
		"../../examples/mailer-sqlserver/db/*/*.sql",
		"../../testdata/evolution/want_sqlserver/*.sql",
		"../e2e/sqlserver/db/*/*.sql",
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("found only %d SQL Server files to check: %v", len(files), files)
	}
	sort.Strings(files)
	out, err := exec.Command(checker, files...).CombinedOutput()
	if err != nil {
		t.Fatalf("tsql-check rejects emitted SQL: %v\n%s", err, out)
	}
}
