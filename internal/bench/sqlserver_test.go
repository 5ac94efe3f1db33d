package bench

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tsqlCheck finds the offline T-SQL grammar check (QUEUEGEN_TSQL_CHECK,
// else tsql-check beside the repository), or fails and names how to
// provide it.
func tsqlCheck(t *testing.T) string {
	t.Helper()
	for _, c := range []string{os.Getenv("QUEUEGEN_TSQL_CHECK"), "../../../shared/tsql-check/tsql-check", "/work/shared/tsql-check/tsql-check"} {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			abs, _ := filepath.Abs(c)
			return abs
		}
	}
	t.Fatal("no tsql-check: the SQL Server bench target's SQL cannot be checked; set QUEUEGEN_TSQL_CHECK to the tsql-check script (shared/tsql-check/tsql-check)")
	return ""
}

// msStatements renders every statement of the SQL Server target
// (sqlserver_sql.go), with the names it writes them with.
func msStatements() map[string]string {
	out := map[string]string{
		"createDatabase":        msCreateDatabase(Schema),
		"dropDatabase":          msDropDatabase(Schema),
		"allowSnapshot":         msAllowSnapshot,
		"beginSnapshot":         msBeginSnapshot,
		"endSnapshot":           msEndSnapshot,
		"insertPolled":          msInsertPolled,
		"countRows":             msCountRows,
		"fillKept":              msFillKept,
		"versionStore":          msVersionStore,
		"rowsAndSize":           msRowsAndSize,
		"sizes":                 msSizes,
		"limitedRunning":        msLimitedRunning,
		"limitedLeft":           msLimitedLeft,
		"ratedLeft":             msRatedLeft,
		"claimTimes":            msClaimTimes,
		"ghosts bench_queue":    msGhosts("bench_queue"),
		"statistics bench":      msUpdateStatistics("bench_queue"),
		"statistics bench_kept": msUpdateStatistics("bench_kept_queue"),
	}
	return out
}

// TestSQLServerBenchGrammar passes every statement of the SQL Server
// bench target, and the SQL Server bench queue's generated migrations and
// queries (the rest of what the target runs), through the T-SQL grammar
// check, in one call. No SQL Server runs here: this is the evidence that
// SQL Server's parser accepts the text, not that the statements run.
func TestSQLServerBenchGrammar(t *testing.T) {
	checker := tsqlCheck(t)
	dir := t.TempDir()
	stmts := msStatements()
	names := make([]string, 0, len(stmts))
	for name := range stmts {
		names = append(names, name)
	}
	slices.Sort(names)
	var files []string
	byFile := map[string]string{}
	for i, name := range names {
		f := filepath.Join(dir, fmt.Sprintf("%02d.sql", i))
		if err := os.WriteFile(f, []byte(stmts[name]+";\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		byFile[f] = name
	}
	generated, err := filepath.Glob("db/sqlserver/*/*.sql")
	if err != nil || len(generated) < 8 {
		t.Fatalf("found %d generated SQL Server files of the bench queue (go generate ./internal/bench/): %v", len(generated), err)
	}
	files = append(files, generated...)
	out, err := exec.Command(checker, files...).CombinedOutput()
	if err != nil {
		msg := string(out)
		for f, name := range byFile {
			msg = strings.ReplaceAll(msg, f, filepath.Base(f)+" ("+name+")")
		}
		t.Fatalf("tsql-check rejects the SQL Server bench's SQL: %v\n%s", err, msg)
	}
}

// TestSQLServerBenchSQLInOneFile: the SQL Server target's file holds no
// SQL of its own (string literals that begin a statement or a clause), so
// that TestSQLServerBenchGrammar checks all of it.
func TestSQLServerBenchSQLInOneFile(t *testing.T) {
	stmt := regexp.MustCompile(`(?i)^\s*(SELECT|UPDATE|DELETE|INSERT|SET|WITH|WHERE|AND|OR|FROM|ORDER|EXEC|MERGE|CREATE|DROP|ALTER|IF|BEGIN|ROLLBACK)\b`)
	f, err := parser.ParseFile(token.NewFileSet(), "sqlserver.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && stmt.MatchString(s) {
				t.Errorf("sqlserver.go: SQL outside sqlserver_sql.go: %q", s)
			}
		}
		return true
	})
}

// TestSQLServerBenchNames: every lower-case name in the target's
// statements (they write keywords and functions in upper case) is a table
// or column of the generated bench migrations, or one of the catalog's or
// the statements' own: the check a grammar cannot make, that no statement
// names a table or column that is not there.
func TestSQLServerBenchNames(t *testing.T) {
	migrations, err := filepath.Glob("db/sqlserver/migrations/*.sql")
	if err != nil || len(migrations) == 0 {
		t.Fatalf("no SQL Server bench migrations (go generate ./internal/bench/): %v", err)
	}
	word := regexp.MustCompile(`\b[a-z_][a-z0-9_]*\b`)
	known := map[string]bool{}
	for _, m := range migrations {
		text, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		code := regexp.MustCompile(`--.*`).ReplaceAllString(string(text), "") // names, not comments' words
		for _, w := range word.FindAllString(code, -1) {
			known[w] = true
		}
	}
	for _, w := range strings.Fields(`
		queuegen_bench
		sys dm_db_index_physical_stats ghost_record_count dm_tran_version_store_space_usage reserved_page_count database_id
		dm_db_partition_stats object_id index_id row_count used_page_count
		per a b c e f d`) {
		known[w] = true
	}
	for name, stmt := range msStatements() {
		// Leave out literals and parameters (@p1).
		bare := regexp.MustCompile(`N?'[^']*'|@@?[A-Za-z0-9_]+`).ReplaceAllString(stmt, "''")
		for _, w := range word.FindAllString(bare, -1) {
			if !known[w] {
				t.Errorf("%s: %q is no name of the generated tables, nor one the target knows:\n%s", name, w, stmt)
			}
		}
	}
	// The table names given to the statements are the generated tables'.
	for _, table := range []string{"bench_queue", "bench_kept_queue", "bench_limited_queue", "bench_rated_queue"} {
		if !known[table] {
			t.Errorf("no table %s in the generated migrations", table)
		}
	}
}

// TestSQLServerBenchURL: the bench's database replaces the address's,
// whatever the case of its key; the login is bounded unless the address
// bounds it itself.
func TestSQLServerBenchURL(t *testing.T) {
	got, err := msURL("sqlserver://sa:pw@db:1433?Database=app&encrypt=disable", "queuegen_bench")
	if err != nil || !strings.Contains(got, "database=queuegen_bench") || strings.Contains(got, "app") ||
		!strings.Contains(got, "connection+timeout=10") || !strings.Contains(got, "encrypt=disable") {
		t.Errorf("msURL = %s, %v", got, err)
	}
	got, _ = msURL("sqlserver://sa:pw@db?database=app&connection+timeout=3", "")
	if !strings.Contains(got, "database=app") || strings.Contains(got, "=10") {
		t.Errorf("msURL changed the address's database or timeout: %s", got)
	}
	if msDatabaseOf("sqlserver://sa:pw@db?DATABASE=queuegen_bench") != "queuegen_bench" {
		t.Error("msDatabaseOf")
	}
}

// TestSQLServerBenchNeverHangs: bench on a SQL Server that accepts the
// connection and never answers is an error within the connect bound, and
// on one that refuses it an error at once; each says it cannot connect,
// without the password. Bench refuses, before connecting, to work in the
// database the address names (it would drop it).
func TestSQLServerBenchNeverHangs(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // holds it open, answering nothing
		}
	}()
	for _, c := range []struct{ addr, workload string }{{l.Addr().String(), "push"}, {"127.0.0.1:1", "push"}, {"127.0.0.1:1", Limits}} {
		addr := c.addr
		for _, workload := range []string{c.workload} {
			start := time.Now()
			err := Run(context.Background(), "sqlserver://sa:s3cret@"+addr+"?database=app", Config{Workload: workload, Out: io.Discard})
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), "cannot connect to the database") || strings.Contains(err.Error(), "s3cret") ||
				took > msConnectTimeout+10*time.Second {
				t.Errorf("bench %s on %s = %v after %s", workload, addr, err, took)
			}
		}
	}
	err = Run(context.Background(), "sqlserver://sa:s3cret@127.0.0.1:1?database="+Schema, Config{Workload: "push", Out: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "creates and drops database "+Schema) {
		t.Errorf("bench in its own database's address = %v", err)
	}
	if err := Run(context.Background(), "sqlserver://sa:s3cret@127.0.0.1:1?database=app", Config{Workload: Retention, Out: io.Discard}); err == nil ||
		!strings.Contains(err.Error(), "run it on PostgreSQL") {
		t.Errorf("retention on SQL Server = %v", err)
	}
}
