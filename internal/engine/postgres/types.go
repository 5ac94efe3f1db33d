package postgres

import (
	"strings"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/gocode"
	"github.com/queuegen/queuegen/internal/spec"
)

// Column is the table column of a spec column: its PostgreSQL type, NOT
// NULL unless nullable, and its default as a literal of the type.
func (Engine) Column(c *spec.Column) *catalog.Column {
	col := &catalog.Column{Name: c.Name, Type: c.Type.SQL(), NotNull: !c.Nullable, RenamedFrom: c.RenamedFrom}
	switch {
	case c.Default != nil:
		col.Default = literal(c.Type, *c.Default)
	case c.DefaultSQL != "":
		col.Default = c.DefaultSQL // one of spec.DefaultExpressions, all PostgreSQL
	}
	return col
}

// literal renders a default value the spec has validated for type t as an
// SQL literal of that type. Values reach SQL only as literals built here,
// quotes doubled, never as raw text.
func literal(t spec.Type, v string) string {
	switch t.Name {
	case "smallint", "integer", "bigint", "numeric", "real", "double precision", "boolean":
		return v
	case "text", "varchar":
		return quote(v)
	}
	return quote(v) + "::" + t.Name
}

// quote renders s as a standard-conforming SQL string literal.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

var (
	timeTime = gocode.Named(gocode.Time.Ident("Time"))
	numeric  = gocode.Named(pgtype.Ident("Numeric"))
	uuid     = gocode.Named(pgtype.Ident("UUID"))
	jsonRaw  = gocode.Nilable(gocode.JSON.Ident("RawMessage"))
)

// GoType is the Go type sqlc gives a column of type t under pgx/v5 with
// emit_pointers_for_null_types and the time overrides of the generated
// sqlc.yaml: pointers for nullable scalars; pgtype.Numeric and pgtype.UUID
// (which carry their own NULL), []byte, json.RawMessage (for jsonb) and
// slices (nil is NULL) as they are.
func (Engine) GoType(t spec.Type, nullable bool) gocode.Type {
	var inner gocode.Type
	pointer := nullable
	switch t.Name {
	case "text", "varchar":
		inner = gocode.String
	case "smallint":
		inner = gocode.Int16
	case "integer":
		inner = gocode.Int32
	case "bigint":
		inner = gocode.Int64
	case "boolean":
		inner = gocode.Bool
	case "real":
		inner = gocode.Float32
	case "double precision":
		inner = gocode.Float64
	case "numeric":
		inner, pointer = numeric, false
	case "uuid":
		inner, pointer = uuid, false
	case "timestamptz", "date":
		inner = timeTime
	case "jsonb":
		inner, pointer = jsonRaw, false
	case "bytea":
		inner, pointer = gocode.Bytes, false
	default:
		panic("postgres: unhandled type " + t.Name)
	}
	if t.Array {
		return inner.SliceOf()
	}
	if pointer {
		return inner.Ptr()
	}
	return inner
}
