package generate_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/generate"
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
		"../../testdata/sqlserver*/db/*/*.sql",
		"../../examples/mailer-sqlserver/db/*/*.sql",
		"../../testdata/evolution/want_sqlserver/*.sql",
		"../../integration/e2e/sqlserver/db/*/*.sql",
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

// sqlServerSpec is a SQL Server spec of queue email; settings and columns
// are inserted where the spec is written.
const sqlServerSpec = `version: 1
engine: sqlserver
%s
package: {name: jobs, dir: jobs}
migrations: migrations
queries: queries
queues:
  - name: email
    unique: %t
    payload:
      columns:
        recipient: text
%s`

// generateSQLServer writes the spec into dir and generates it, returning
// the migration it added (none: "").
func generateSQLServer(t *testing.T, dir, settings string, unique bool, columns string) string {
	t.Helper()
	before, _ := filepath.Glob(filepath.Join(dir, "migrations", "*.sql"))
	spec := filepath.Join(dir, "queuegen.yaml")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(sqlServerSpec, settings, unique, columns)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := generate.Generate(spec, generate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write(); err != nil {
		t.Fatal(err)
	}
	after, _ := filepath.Glob(filepath.Join(dir, "migrations", "*.sql"))
	if len(after) == len(before) {
		return ""
	}
	data, err := os.ReadFile(after[len(after)-1])
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestSQLServerLiveTableMigrations checks what a spec change writes for a
// SQL Server table that holds rows: an index added ONLINE = ON, or, with
// sqlserver.online_index: false, offline with the lock it takes said; a
// jsonb column's ISJSON check added WITH NOCHECK after the column (and
// dropped before it in Down); and every migration setting the session
// options filtered indexes need first, in Up and in Down. The files pass
// tsql-check.
func TestSQLServerLiveTableMigrations(t *testing.T) {
	checker := tsqlCheck(t)
	for _, tc := range []struct {
		name, settings string
		online         bool
	}{
		{"default", "", true},
		{"online", "sqlserver: {online_index: true}", true},
		{"offline", "sqlserver: {online_index: false}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := projectDir(t)
			var files []string
			first := generateSQLServer(t, dir, tc.settings, false, "")
			if !strings.Contains(first, "CONSTRAINT email_queue_state_check") || strings.Contains(first, "ONLINE") {
				t.Fatalf("first migration: want the table, built without ONLINE (it is empty):\n%s", first)
			}
			index := generateSQLServer(t, dir, tc.settings, true, "")
			if got := strings.Contains(index, "WITH (ONLINE = ON)"); got != tc.online {
				t.Errorf("index migration: ONLINE = ON %t, want %t:\n%s", got, tc.online, index)
			}
			if !tc.online && !strings.Contains(index, "holds a\n-- shared lock on the table") {
				t.Errorf("offline index migration does not say what it locks:\n%s", index)
			}
			if !strings.Contains(index, "CREATE UNIQUE INDEX email_queue_unique_key_idx") {
				t.Errorf("index migration builds no unique key index:\n%s", index)
			}
			check := generateSQLServer(t, dir, tc.settings, true, "        meta: {type: jsonb, nullable: true}\n")
			up, down, _ := strings.Cut(check, "-- +goose Down")
			add := strings.Index(up, "ALTER TABLE email_queue ADD meta NVARCHAR(MAX);")
			constrain := strings.Index(up, "ALTER TABLE email_queue WITH NOCHECK ADD CONSTRAINT email_queue_meta_json_check CHECK (ISJSON(N'[' + meta + N']') = 1);")
			if add < 0 || constrain < add {
				t.Errorf("Up: want the column added, then its check WITH NOCHECK:\n%s", up)
			}
			drop := strings.Index(down, "ALTER TABLE email_queue DROP CONSTRAINT email_queue_meta_json_check;")
			dropColumn := strings.Index(down, "ALTER TABLE email_queue DROP COLUMN meta;")
			if drop < 0 || dropColumn < drop {
				t.Errorf("Down: want the check dropped, then its column:\n%s", down)
			}
			const session = "SET ANSI_NULLS, ANSI_PADDING, ANSI_WARNINGS, ARITHABORT, CONCAT_NULL_YIELDS_NULL, QUOTED_IDENTIFIER ON;\nSET NUMERIC_ROUNDABORT OFF;\n\n"
			for i, m := range []string{first, index, check} {
				up, down, _ := strings.Cut(m, "-- +goose Down")
				_, up, _ = strings.Cut(up, "-- +goose Up")
				for _, part := range []string{up, down} {
					body := strings.TrimLeft(strings.Join(slices.DeleteFunc(strings.Split(part, "\n"), func(l string) bool { return strings.HasPrefix(l, "--") }), "\n"), "\n")
					if !strings.HasPrefix(body, session) {
						t.Errorf("migration %d: Up and Down must set the session options first:\n%s", i+1, part)
					}
				}
				p := filepath.Join(dir, fmt.Sprintf("m%d.sql", i+1))
				os.WriteFile(p, []byte(m), 0o644)
				files = append(files, p)
			}
			if out, err := exec.Command(checker, files...).CombinedOutput(); err != nil {
				t.Fatalf("tsql-check rejects the migrations: %v\n%s", err, out)
			}
		})
	}
}

// TestSQLServerOutputInto checks that no SQL Server statement returns rows
// with OUTPUT alone: SQL Server refuses OUTPUT without INTO on a table with
// an enabled trigger (error 334), so a DBA's audit trigger would stop every
// push and claim. Each OUTPUT writes INTO a table variable the query
// declares and SELECTs from.
func TestSQLServerOutputInto(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../../testdata/sqlserver*/db/queries/*.sql", "../../examples/mailer-sqlserver/db/queries/*.sql", "../../integration/e2e/sqlserver/db/queries/*.sql"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	outputs := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, query := range strings.Split(string(data), "-- name: ")[1:] {
			name, _, _ := strings.Cut(query, " ")
			lines := strings.Split(query, "\n")
			for i, line := range lines {
				if line == "OUTPUT" {
					// A column list over lines, then INTO: a table
					// variable, or the archive (a table SQL Server lets
					// OUTPUT write into: no trigger, check or foreign key).
					outputs++
					for _, l := range lines[i+1:] {
						if into, ok := strings.CutPrefix(l, "INTO "); ok {
							if !strings.HasPrefix(into, "@") && !strings.Contains(into, "_archive (") {
								t.Errorf("%s: %s: OUTPUT INTO a table other than the archive: %q", filepath.Base(f), name, l)
							}
							break
						}
						if !strings.HasPrefix(l, "    ") {
							t.Errorf("%s: %s: OUTPUT without INTO", filepath.Base(f), name)
							break
						}
					}
					continue
				}
				rest, ok := strings.CutPrefix(line, "OUTPUT ")
				if !ok {
					continue
				}
				outputs++
				_, into, ok := strings.Cut(rest, " INTO @")
				variable, _, _ := strings.Cut(strings.TrimSuffix(into, ";"), " ")
				if !ok || !strings.Contains(query, "DECLARE @"+variable+" TABLE (") || !strings.Contains(query, "FROM @"+variable+";") {
					t.Errorf("%s: %s: OUTPUT without INTO a declared table variable it then SELECTs from: %q", filepath.Base(f), name, line)
				}
			}
		}
	}
	if outputs < 10 {
		t.Fatalf("found only %d OUTPUT clauses in %v", outputs, files)
	}
}
