package spec_test

import (
	"strings"
	"testing"

	_ "github.com/queuegen/queuegen/internal/engine/all"
	"github.com/queuegen/queuegen/internal/spec"
)

// TestHostileNames: every name that reaches SQL is a plain identifier;
// each hostile one is refused with a message that says why.
func TestHostileNames(t *testing.T) {
	pg := spec.RulesFor("postgresql")
	for name, want := range map[string]string{
		`email"; DROP TABLE users; --`: "is not a plain lower-case identifier",
		`a"b`:                          "is not a plain lower-case identifier",
		"a;b":                          "is not a plain lower-case identifier",
		"a b":                          "is not a plain lower-case identifier",
		"Email":                        "is not a plain lower-case identifier",
		"eMail":                        "is not a plain lower-case identifier",
		"1abc":                         "is not a plain lower-case identifier",
		"émail":                        "is not a plain lower-case identifier",
		"a-b":                          "is not a plain lower-case identifier",
		"a.b":                          "is not a plain lower-case identifier",
		"_":                            "with at least one letter",
		"select":                       "is an SQL keyword",
		"user":                         "is an SQL keyword",
		"order":                        "is an SQL keyword",
		strings.Repeat("a", 64):        "is 64 bytes long; PostgreSQL names are at most 63",
		strings.Repeat("é", 40):        "is 80 bytes long",
		"pg_queue":                     "starts with pg_",
		"":                             "cannot be empty",
	} {
		if msg := pg.CheckName(name); !strings.Contains(msg, want) {
			t.Errorf("CheckName(%q) = %q, want it to say %q", name, msg, want)
		}
	}
	for _, name := range []string{"email", "_private", "a1", strings.Repeat("a", 63), "name", "data"} {
		if msg := pg.CheckName(name); msg != "" {
			t.Errorf("CheckName(%q) = %s", name, msg)
		}
	}
}

// TestRulesPerEngine: each engine's naming rules are its own: the length
// limit (PostgreSQL 63 bytes, MySQL 64, SQL Server 128), PostgreSQL's
// keywords, pg_ prefix and system columns only on PostgreSQL, and the
// sqlserver: section only for engine sqlserver; the parser applies the
// rules of the engine named by engine:, wherever that key is.
func TestRulesPerEngine(t *testing.T) {
	for _, c := range []struct {
		engine string
		name   string
		want   string // "" for accepted
	}{
		{"postgresql", strings.Repeat("a", 63), ""},
		{"postgresql", strings.Repeat("a", 64), "is 64 bytes long; PostgreSQL names are at most 63"},
		{"mysql", strings.Repeat("a", 64), ""},
		{"mysql", strings.Repeat("a", 65), "is 65 bytes long; MySQL names are at most 64"},
		{"sqlserver", strings.Repeat("a", 128), ""},
		{"sqlserver", strings.Repeat("a", 129), "is 129 bytes long; SQL Server names are at most 128"},
		{"postgresql", "user", "is an SQL keyword"},
		{"mysql", "user", ""},
		{"sqlserver", "user", ""}, // refused by the engine's Check, beside its other errors
		{"postgresql", "pg_jobs", "starts with pg_"},
		{"mysql", "pg_jobs", ""},
		{"nosuchengine", strings.Repeat("a", 64), "PostgreSQL names are at most 63"},
		{"mysql", "A", "is not a plain lower-case identifier"},
	} {
		got := spec.RulesFor(c.engine).CheckName(c.name)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: CheckName(%q) = %q, want %q", c.engine, c.name, got, c.want)
		}
	}

	// engine: after the names still governs them; xmin and a defaulted n
	// are PostgreSQL's alone.
	const body = `version: 1
package: {name: jobs, dir: jobs}
migrations: m
queries: q
queues:
  - name: a
    payload: {columns: {%s: text, xmin: text, n: {type: integer, default: "1"}}}
`
	long := strings.Repeat("b", 64)
	if _, err := spec.Parse("q.yaml", []byte(strings.Replace(body, "%s", long, 1)+"engine: mysql\n")); err != nil {
		t.Errorf("mysql: %v", err)
	}
	_, err := spec.Parse("q.yaml", []byte(strings.Replace(body, "%s", long, 1)+"engine: postgresql\n"))
	for _, want := range []string{
		"q.yaml:7:25: queues[a].payload.columns." + long + ": \"" + long + "\" is 64 bytes long; PostgreSQL names are at most 63",
		"queues[a].payload.columns.xmin: \"xmin\" is a PostgreSQL system column name",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("postgresql: want %q in\n%v", want, err)
		}
	}
	_, err = spec.Parse("q.yaml", []byte(strings.Replace(body, "%s", "c", 1)+"engine: mysql\nsqlserver: {online_index: false}\n"))
	if err == nil || !strings.Contains(err.Error(), "sqlserver: settings for engine sqlserver, but the spec's engine is mysql") {
		t.Errorf("sqlserver: section on mysql: %v", err)
	}
	s, err := spec.Parse("q.yaml", []byte(strings.Replace(body, "%s", "c", 1)+"engine: sqlserver\nsqlserver: {online_index: false}\n"))
	if err != nil || s.SQLServer.OnlineIndex {
		t.Errorf("sqlserver: section on sqlserver: %v, online_index %v", err, s != nil && s.SQLServer.OnlineIndex)
	}
	s, err = spec.Parse("q.yaml", []byte(strings.Replace(body, "%s", "c", 1)+"engine: sqlserver\n"))
	if err != nil || !s.SQLServer.OnlineIndex {
		t.Errorf("sqlserver: online_index defaults to true: %v", err)
	}
}

// TestArchiveNameLength: PostgreSQL's archive partitions are tables named
// <table>_archive_pYYYYMMDD, so the table name leaves room for the suffix;
// MySQL's are named inside the archive, so only <table>_archive must fit
// its 64 bytes.
func TestArchiveNameLength(t *testing.T) {
	spec1 := func(table, engine string) []byte {
		return []byte(`version: 1
engine: ` + engine + `
package: {name: jobs, dir: jobs}
migrations: m
queries: q
queues:
  - name: a
    table: ` + table + `
    on_success: archive
    retention: {succeeded: 7d}
    payload: {columns: {n: integer}}
`)
	}
	t50, t57 := strings.Repeat("t", 50), strings.Repeat("t", 57)
	if _, err := spec.Parse("q.yaml", spec1(t50, "mysql")); err != nil {
		t.Errorf("mysql, a 50-byte table: %v", err)
	}
	if _, err := spec.Parse("q.yaml", spec1(t57, "mysql")); err == nil || !strings.Contains(err.Error(), "the archive's name "+t57+"_archive is longer than 64 bytes; use a table name of at most 56 bytes") {
		t.Errorf("mysql, a 57-byte table: %v", err)
	}
	if _, err := spec.Parse("q.yaml", spec1(t50, "postgresql")); err == nil || !strings.Contains(err.Error(), "_archive_pYYYYMMDD, longer than 63 bytes") {
		t.Errorf("postgresql, a 50-byte table: %v", err)
	}
}
