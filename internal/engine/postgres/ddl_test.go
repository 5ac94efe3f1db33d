package postgres

import (
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/spec"
	"github.com/queuegen/queuegen/schema"
	"github.com/queuegen/queuegen/templates"
)

func TestWidens(t *testing.T) {
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		{"varchar(10)", "varchar(20)", true},
		{"varchar(10)", "varchar(10)", true},
		{"varchar(20)", "varchar(10)", false},
		{"varchar(10)", "text", true},
		{"text", "varchar(10)", false},
		{"varchar(10)[]", "text[]", false}, // an array's type change rewrites the table
		{"varchar(10)[]", "varchar(20)[]", false},
		{"varchar(10)[]", "text", false},
		{"numeric(10, 2)", "numeric(12, 2)", true},
		{"numeric(10, 2)", "numeric(12, 3)", false},
		{"numeric(10, 2)", "numeric", true},
		{"numeric", "numeric(10, 2)", false},
		{"integer", "bigint", false},
		{"smallint", "integer", false},
		{"text", "jsonb", false},
	} {
		if got, _ := (ddl{}).Widens(c.from, c.to); got != c.want {
			t.Errorf("Widens(%s, %s) = %t, want %t", c.from, c.to, got, c.want)
		}
	}
}

// TestOwnTablesMatchSchema: the registry, periodic and nodes tables the DDL
// builder writes into migrations are exactly what schema/ declares for
// queuegen's own sqlc queries, so the two cannot drift apart.
func TestOwnTablesMatchSchema(t *testing.T) {
	d := Engine{}.DDL("public")
	for _, c := range []struct{ got, want string }{
		{d.CreateTable(Engine{}.Registry()), schema.Registry},
		{d.CreateTable(Engine{}.Periodic()), schema.Periodic},
		{d.CreateTable(Engine{}.Nodes()), schema.Nodes},
	} {
		if strings.TrimSpace(c.got) != strings.TrimSpace(c.want) {
			t.Errorf("DDL builder writes\n%s\nbut schema/ declares\n%s", c.got, c.want)
		}
	}
}

func TestDefaultLiteralsAreQuoted(t *testing.T) {
	s, err := spec.Parse("q.yaml", []byte(`version: 1
package: {name: jobs, dir: jobs}
migrations: m
queries: q
queues:
  - name: email
    payload:
      columns:
        note: {type: text, default: "it's'; DROP TABLE x; --"}
        due: {type: date, default: "2026-01-01"}
        tries: {type: integer, default: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`'it''s''; DROP TABLE x; --'`, `'2026-01-01'::date`, `3`}
	for i, c := range s.Queues[0].Payload.Columns {
		if got := (Engine{}).Column(c).Default; got != want[i] {
			t.Errorf("%s default = %s, want %s", c.Name, got, want[i])
		}
	}
}

// TestHeldInTemplate: the transaction-mode Depth query uses Held as it is.
func TestHeldInTemplate(t *testing.T) {
	data, err := templates.FS.ReadFile("postgresql/queries.sql.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "NOT ("+Held+")") {
		t.Errorf("templates/postgresql/queries.sql.tmpl does not hold Held:\n%s", Held)
	}
}
