package ops

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
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

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/queuegen/queuegen/internal/dburl"
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
	t.Fatal("no tsql-check: the SQL Server backend's SQL cannot be checked; set QUEUEGEN_TSQL_CHECK to the tsql-check script (shared/tsql-check/tsql-check)")
	return ""
}

// msStatements renders every statement of the SQL Server backend
// (sqlserver_sql.go), in each of its variants: every filter state, with
// and without held jobs and narrowing, every action, with and without
// the failures column.
func msStatements() map[string]string {
	s := msSQL{schema: "dbo"}
	t := s.name("email_queue")
	selects := []string{"[recipient]", "LOWER(CONVERT(NVARCHAR(36), [token]))"}
	out := map[string]string{
		"queues":         s.queues(),
		"columns":        s.columns(),
		"now":            s.now(),
		"stats":          s.stats(t),
		"oldest":         s.oldest(t),
		"lastHour":       s.lastHour(t),
		"rows":           s.rows(),
		"showplan on":    s.showplan(true),
		"showplan off":   s.showplan(false),
		"finished":       s.finished(t),
		"periodic":       s.periodic(),
		"oldestSnapshot": s.oldestSnapshot(),
		"holders":        s.holders(t),
		"catalogRows":    s.catalogRows(),
		"setPaused":      s.setPaused(),
		"nodes":          s.nodes(),
		"leasesByNode":   s.leasesByNode(t),
		"leasesOf":       s.leasesOf(t),
		"lockTimeout":    s.lockTimeout(5000),
	}
	for _, hint := range []string{msDirty, msReadPast} {
		out["claimedDue "+hint] = s.claimedDue(t, hint)
		out["claimedDueIDs "+hint] = s.claimedDueIDs(t, hint, false)
		out["claimedDueIDs only "+hint] = s.claimedDueIDs(t, hint, true)
	}
	narrow := Filter{Since: time.Unix(1, 0), Until: time.Unix(2, 0), Column: "recipient", Value: "a", ErrorText: "boom"}
	for _, state := range FilterStates {
		out["estimate "+state] = s.estimate(t, state)
		for _, held := range [][]int64{nil, {1, 2}} {
			for _, f := range []Filter{{State: state}, {ID: 7}, {State: state, Since: narrow.Since, Until: narrow.Until, Column: narrow.Column, Value: narrow.Value, ErrorText: narrow.ErrorText}} {
				where, args := msWhere(f, held, 2, 9)
				name := fmt.Sprintf("%s held=%v id=%d args=%d", state, held, f.ID, len(args))
				for _, failures := range []bool{false, true} {
					out[fmt.Sprintf("page %s failures=%t", name, failures)] = s.page(t, where, failures, selects)
					out[fmt.Sprintf("heldPage %s failures=%t", name, failures)] = s.heldPage(t, where, failures, selects)
				}
				where1, _ := msWhere(f, held, 1, 0)
				for _, a := range []Action{Retry, Cancel, Purge} {
					out[fmt.Sprintf("count %s %s", a, name)] = s.count(t, where1, a)
					out[fmt.Sprintf("matching %s %s", a, name)] = s.matching(t, msReadPast, where1, a)
					out[fmt.Sprintf("heldMatching %s %s", a, name)] = s.heldMatching(t, where, a)
				}
			}
		}
	}
	for _, a := range []Action{Retry, Cancel, Purge} {
		out["lock "+string(a)] = s.lock(t, a)
		out["batchMatching "+string(a)] = s.batchMatching(t, a)
		for _, failures := range []bool{false, true} {
			stmt, err := s.change(t, a, failures)
			if err != nil {
				panic(err)
			}
			out[fmt.Sprintf("change %s failures=%t", a, failures)] = stmt
		}
	}
	return out
}

// TestSQLServerOpsGrammar passes every statement of the SQL Server
// backend, in every variant, through the T-SQL grammar check, in one call.
// No SQL Server runs here: this is the evidence that SQL Server's parser
// accepts the text, not that the statements run.
func TestSQLServerOpsGrammar(t *testing.T) {
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
		f := filepath.Join(dir, fmt.Sprintf("%03d.sql", i))
		if err := os.WriteFile(f, []byte(stmts[name]+";\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		byFile[f] = name
	}
	out, err := exec.Command(checker, files...).CombinedOutput()
	if err != nil {
		msg := string(out)
		for f, name := range byFile {
			msg = strings.ReplaceAll(msg, f, filepath.Base(f)+" ("+name+")")
		}
		t.Fatalf("tsql-check rejects the SQL Server backend's SQL: %v\n%s", err, msg)
	}
	if len(files) < 200 {
		t.Errorf("checked only %d statements", len(files))
	}
}

// TestSQLServerSQLInOneFile: the SQL Server backend's files hold no SQL
// of their own (string literals that begin a statement or a clause), so
// that TestSQLServerOpsGrammar checks all of it.
func TestSQLServerSQLInOneFile(t *testing.T) {
	stmt := regexp.MustCompile(`^\s*(SELECT|UPDATE|DELETE|INSERT|SET|WITH|WHERE|AND|OR|FROM|ORDER|EXEC|MERGE)\b`)
	files, _ := filepath.Glob("sqlserver*.go")
	for _, file := range files {
		if file == "sqlserver_sql.go" || strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && stmt.MatchString(s) {
					t.Errorf("%s: SQL outside sqlserver_sql.go: %q", file, s)
				}
			}
			return true
		})
	}
}

// TestSQLServerStatesMatch: the T-SQL states and actions are those of the
// one definition (predicates, applicable).
func TestSQLServerStatesMatch(t *testing.T) {
	for state := range predicates {
		if msPredicates[state] == "" {
			t.Errorf("no T-SQL predicate of state %s", state)
		}
		if strings.Contains(predicates[state].pg, "{held}") != strings.Contains(msPredicates[state], "{held}") {
			t.Errorf("state %s: {held} in one engine's predicate and not the other's", state)
		}
	}
	if len(msPredicates) != len(predicates) {
		t.Errorf("%d T-SQL predicates, %d states", len(msPredicates), len(predicates))
	}
	for a := range applicable {
		if msApplicable[a] == "" {
			t.Errorf("no T-SQL predicate of action %s", a)
		}
	}
}

// TestSQLServerWhere: the filter's predicate numbers its parameters from
// the first given, in the order of its arguments, the held jobs as one
// JSON array.
func TestSQLServerWhere(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	for _, c := range []struct {
		f      Filter
		held   []int64
		first  int
		before int64
		where  string
		args   []any
	}{
		{Filter{State: "dead"}, []int64{1}, 2, 0, "state = 'dead'", nil},
		{Filter{State: "all"}, nil, 1, 50, "(1 = 1) AND id < @p1", []any{int64(50)}},
		{Filter{State: "available"}, nil, 2, 0, "state = 'available' AND run_after <= SYSUTCDATETIME() AND NOT (1 = 0)", nil},
		{Filter{State: "running"}, []int64{3, 4}, 2, 10,
			"((state = 'running' AND (locked_until IS NULL OR locked_until >= SYSUTCDATETIME())) OR (id IN (SELECT id FROM OPENJSON(@p2) WITH (id BIGINT '$')))) AND id < @p3",
			[]any{"[3,4]", int64(10)}},
		{Filter{ID: 7, Column: "to", Value: "x"}, []int64{7}, 1, 0,
			"id = @p1 AND CAST([to] AS NVARCHAR(MAX)) = @p2", []any{int64(7), "x"}},
		{Filter{State: "failed", Since: since, ErrorText: "50%"}, []int64{5}, 2, 0,
			"(state = 'dead' OR (state = 'available' AND errors <> N'[]' AND NOT (id IN (SELECT id FROM OPENJSON(@p2) WITH (id BIGINT '$'))))) AND created_at >= @p3" +
				" AND EXISTS (SELECT 1 FROM OPENJSON(errors) AS e WHERE CHARINDEX(CAST(@p4 AS NVARCHAR(MAX)) COLLATE Latin1_General_100_BIN2, e.value COLLATE Latin1_General_100_BIN2) > 0)",
			[]any{"[5]", msTime(since), "50%"}},
	} {
		where, args := msWhere(c.f, c.held, c.first, c.before)
		if where != c.where || fmt.Sprint(args) != fmt.Sprint(c.args) {
			t.Errorf("msWhere(%+v, %v, %d, %d) =\n%s %v\nwant\n%s %v", c.f, c.held, c.first, c.before, where, args, c.where, c.args)
		}
	}
}

func TestSQLServerQuote(t *testing.T) {
	if got := msQuote("a]b"); got != "[a]]b]" {
		t.Errorf("msQuote = %s", got)
	}
	b := &msBackend{schema: "jobs", sql: msSQL{schema: "jobs"}}
	if got, err := b.table(Queue{Name: "q", Table: "q_queue"}); got != "[jobs].[q_queue]" || err != nil {
		t.Errorf("table = %s, %v", got, err)
	}
	if _, err := b.table(Queue{Name: "q", Table: "x]; DROP TABLE y; --"}); err == nil {
		t.Error("a registry's table name that is no plain identifier was taken")
	}
	if jsonArray([]int64(nil)) != "[]" || jsonArray([]string{`a"b`}) != `["a\"b"]` {
		t.Error("jsonArray")
	}
}

// TestSQLServerKinds: how each SQL Server type renders in the payload,
// and a uniqueidentifier's select.
func TestSQLServerKinds(t *testing.T) {
	for _, c := range []struct {
		typ  string
		json bool
		kind columnKind
		sel  string
	}{
		{"nvarchar", false, kindString, "[c]"},
		{"nvarchar", true, kindJSON, "[c]"},
		{"bit", false, kindBool, "[c]"},
		{"bigint", false, kindNumber, "[c]"},
		{"real", false, kindReal, "[c]"},
		{"decimal", false, kindNumber, "[c]"},
		{"datetime2", false, kindTime, "[c]"},
		{"date", false, kindDate, "[c]"},
		{"varbinary", false, kindBytes, "[c]"},
		{"uniqueidentifier", false, kindString, "LOWER(CONVERT(NVARCHAR(36), [c]))"},
	} {
		kind, sel := msKind("c", c.typ, c.json)
		if kind != c.kind || sel != c.sel {
			t.Errorf("msKind(%s, json %t) = %v, %s; want %v, %s", c.typ, c.json, kind, sel, c.kind, c.sel)
		}
	}
	cols := []myColumn{{"flag", kindBool}, {"n", kindNumber}, {"doc", kindJSON}, {"at", kindTime}, {"r", kindReal}}
	doc, err := payloadJSON(cols, []any{true, []byte("12.50"), `{"b":1,"a":[1e2]}`, time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), float64(float32(1.1))})
	if want := `{"flag": true, "n": 12.50, "doc": {"a":[100],"b":1}, "at": "2026-01-02T03:04:05.000006+00:00", "r": 1.1}`; err != nil || string(doc) != want {
		t.Errorf("payloadJSON = %s, %v; want %s", doc, err, want)
	}
}

func TestSQLServerPlanRows(t *testing.T) {
	plan := `<ShowPlanXML><BatchSequence><Batch><Statements><StmtSimple StatementText="SELECT 1" StatementId="1" StatementEstRows="1234.57" StatementType="SELECT">`
	if n, err := planRows(plan); n != 1234 || err != nil {
		t.Errorf("planRows = %d, %v", n, err)
	}
	if _, err := planRows("<ShowPlanXML/>"); err == nil {
		t.Error("a plan without an estimate was read")
	}
}

// TestSQLServerAddress: the connection's login is bounded unless the URL
// bounds it itself.
func TestSQLServerAddress(t *testing.T) {
	got, err := msAddress("sqlserver://sa:pw@db:1433?database=app")
	if err != nil || !strings.Contains(got, "connection+timeout=10") || !strings.Contains(got, "database=app") {
		t.Errorf("msAddress = %s, %v", got, err)
	}
	got, _ = msAddress("sqlserver://sa:pw@db?connection+timeout=3")
	if strings.Contains(got, "=10") {
		t.Errorf("msAddress overrode the URL's timeout: %s", got)
	}
}

// TestSQLServerNeverHangs: a server that accepts the connection and never
// answers is an error within connectTimeout, and one that refuses it is
// an error at once; neither error shows the password.
func TestSQLServerNeverHangs(t *testing.T) {
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
	for _, addr := range []string{l.Addr().String(), "127.0.0.1:1"} {
		db, err := dburl.Parse("sqlserver://sa:s3cret@" + addr + "?database=app")
		if err != nil {
			t.Fatal(err)
		}
		conn, err := Open(context.Background(), db, "")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = conn.Ping(context.Background())
		took := time.Since(start)
		conn.Close()
		if err == nil || took > connectTimeout+3*time.Second || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Ping of %s = %v after %s", addr, err, took)
		}
	}
}

// TestSQLServerErrors: the server's error numbers are read through
// wrapping, by value or pointer, as go-mssqldb returns them.
func TestSQLServerErrors(t *testing.T) {
	b := &msBackend{}
	deadlock := mssql.Error{Number: 1205, Message: "chosen as the deadlock victim"}
	if !b.retryable(fmt.Errorf("batch: %w", deadlock)) || !b.retryable(&deadlock) || b.retryable(mssql.Error{Number: 1222}) {
		t.Error("retryable: a deadlock (1205) and only it")
	}
	if !msDenied(mssql.Error{Number: 297}) || !msDenied(fmt.Errorf("x: %w", mssql.Error{Number: 300})) || msDenied(mssql.Error{Number: 208}) || msDenied(nil) {
		t.Error("msDenied")
	}
	if msErrno(errors.New("plain")) != 0 {
		t.Error("msErrno of a plain error")
	}
}

// TestSQLServerNames: every lower-case name in the backend's statements
// (its SQL writes keywords and functions in upper case) is a name the
// generated SQL Server migrations use (a table or column), or one of the
// catalog's, OPENJSON's or the statements' own aliases: the check a
// grammar cannot make, that no statement names a column that is not
// there.
func TestSQLServerNames(t *testing.T) {
	migrations, err := filepath.Glob("../../examples/mailer-sqlserver/db/migrations/*.sql")
	if err != nil || len(migrations) == 0 {
		t.Fatalf("no SQL Server migrations: %v", err)
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
		dbo email_queue recipient token
		sys columns types check_constraints object_id name user_type_id column_id parent_object_id
		dm_db_partition_stats partitions row_count rows index_id
		dm_tran_session_transactions dm_tran_active_transactions dm_exec_sessions dm_exec_connections dm_exec_sql_text
		session_id transaction_id transaction_begin_time login_name program_name database_id most_recent_sql_handle text
		value microsecond millisecond minute hour
		job f m e k c t st es txt n at`) {
		known[w] = true
	}
	for name, stmt := range msStatements() {
		// Leave out the text of literals: '$', N'[]', JSON paths.
		// Leave out parameters (@p1) too.
		bare := regexp.MustCompile(`N?'[^']*'|@@?[A-Za-z0-9_]+`).ReplaceAllString(stmt, "''")
		for _, w := range word.FindAllString(bare, -1) {
			if !known[w] {
				t.Errorf("%s: %q is no name of the generated tables, nor one the backend knows:\n%s", name, w, stmt)
			}
		}
	}
}
