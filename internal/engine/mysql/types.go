package mysql

import (
	"fmt"
	"strings"
	"time"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/gocode"
	"github.com/queuegen/queuegen/internal/spec"
)

// Now is the database's clock in every statement queuegen writes: the
// current time in UTC, to the microsecond. Times are stored in DATETIME(6)
// columns as UTC, so what a statement compares and stores does not depend
// on the session's time zone (NOW() would).
const Now = "UTC_TIMESTAMP(6)"

// sqlType is the MySQL type of a spec type (arrays are refused by Check).
func sqlType(t spec.Type) string {
	switch t.Name {
	case "text":
		return "TEXT"
	case "varchar":
		return fmt.Sprintf("VARCHAR(%d)", t.Mods[0])
	case "smallint":
		return "SMALLINT"
	case "integer":
		return "INT"
	case "bigint":
		return "BIGINT"
	case "boolean":
		return "BOOLEAN"
	case "real":
		return "FLOAT"
	case "double precision":
		return "DOUBLE"
	case "numeric":
		if len(t.Mods) == 1 {
			return fmt.Sprintf("DECIMAL(%d)", t.Mods[0])
		}
		return fmt.Sprintf("DECIMAL(%d, %d)", t.Mods[0], t.Mods[1])
	case "uuid":
		return "CHAR(36)"
	case "timestamptz":
		return "DATETIME(6)"
	case "date":
		return "DATE"
	case "jsonb":
		return "JSON"
	case "bytea":
		return "LONGBLOB"
	}
	panic("mysql: unhandled type " + t.Name)
}

// expressionDefault reports whether MySQL takes a column of type t's
// default only as an expression in parentheses: TEXT, BLOB and JSON
// columns take no literal default (MySQL 8.0.13 and later take an
// expression).
func expressionDefault(t spec.Type) bool {
	switch t.Name {
	case "text", "jsonb", "bytea":
		return true
	}
	return false
}

// defaultSQL are the spec's SQL defaults as MySQL writes them: the clock in
// UTC, like every time queuegen stores.
var defaultSQL = map[string]string{
	"now()":             "(" + Now + ")",
	"current_timestamp": "(" + Now + ")",
	"clock_timestamp()": "(" + Now + ")",
	"current_date":      "(UTC_DATE())",
	"gen_random_uuid()": "(UUID())",
}

// Column is the table column of a spec column: its MySQL type, NOT NULL
// unless nullable, and its default as a literal of the type (in
// parentheses where MySQL wants an expression).
func (Engine) Column(c *spec.Column) *catalog.Column {
	col := &catalog.Column{Name: c.Name, Type: sqlType(c.Type), NotNull: !c.Nullable, RenamedFrom: c.RenamedFrom}
	switch {
	case c.Default != nil:
		col.Default = literal(c.Type, *c.Default)
		if expressionDefault(c.Type) {
			col.Default = "(" + col.Default + ")"
		}
	case c.DefaultSQL != "":
		col.Default = defaultSQL[c.DefaultSQL]
	}
	return col
}

// literal renders a default value the spec has validated for type t as a
// MySQL literal of that type. Values reach SQL only as literals built here.
func literal(t spec.Type, v string) string {
	switch t.Name {
	case "smallint", "integer", "bigint", "numeric", "real", "double precision":
		return v
	case "boolean":
		return strings.ToUpper(v)
	case "timestamptz":
		at, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			panic("mysql: unvalidated timestamptz default " + v)
		}
		return quote(at.UTC().Format("2006-01-02 15:04:05.000000"))
	}
	return quote(v)
}

// quote renders s as a MySQL string literal that means s whatever the
// server's sql_mode: quotes are doubled, and a backslash (an escape
// character unless NO_BACKSLASH_ESCAPES is set) is written as CHAR(92),
// joined to the rest with CONCAT. Line breaks are written as CHAR(10) and
// CHAR(13) too, keeping each statement's literals on one line (sqlc's
// MySQL parser misplaces the statements that follow a line break inside a
// literal).
func quote(s string) string {
	var parts []string
	lit := func(p string) string { return "'" + strings.ReplaceAll(p, "'", "''") + "'" }
	start := 0
	for i, r := range s {
		code := 0
		switch r {
		case '\\':
			code = 92
		case '\n':
			code = 10
		case '\r':
			code = 13
		}
		if code == 0 {
			continue
		}
		if i > start {
			parts = append(parts, lit(s[start:i]))
		}
		parts = append(parts, fmt.Sprintf("CHAR(%d USING utf8mb4)", code))
		start = i + 1
	}
	if start < len(s) || len(parts) == 0 {
		parts = append(parts, lit(s[start:]))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "CONCAT(" + strings.Join(parts, ", ") + ")"
}

// ReadExactly is true for real, a FLOAT column (engine.ExactReader):
// under interpolateParams=true the driver uses the text protocol for
// every statement, and the server prints a FLOAT to 6 significant digits
// (MariaDB: a float32 of 1/3 reads back as 0.333333, 16777215 as
// 16777200). A DOUBLE it prints in the shortest digits that read back as
// the same double, and every float32 is a double exactly, so ExactExpr
// reads the FLOAT as a DOUBLE: the digits parse back to the same float32.
func (Engine) ReadExactly(t spec.Type) bool { return t.Name == "real" && !t.Array }

// FiniteFloats: MySQL's FLOAT and DOUBLE hold no NaN or infinity (and the
// driver would write them into the statement as unknown column names), so
// the generated pushes refuse them (engine.FiniteFloats).
func (Engine) FiniteFloats() {}

// ExactExpr is col times the DOUBLE 1: a DOUBLE of the FLOAT's exact
// value (CAST(… AS DOUBLE) needs MySQL 8.0.17).
func (Engine) ExactExpr(col string) string { return col + " * 1e0" }

var (
	timeTime = gocode.Named(gocode.Time.Ident("Time"))
	jsonRaw  = gocode.Nilable(gocode.JSON.Ident("RawMessage"))
)

// GoType is the Go type sqlc's MySQL engine gives a column of type t on
// database/sql, with the overrides of the generated sqlc.yaml: a pointer
// for every nullable column but a BLOB (nil is NULL), string for DECIMAL
// and the UUID text, float32 for FLOAT. A nullable JSON document is a
// *json.RawMessage: database/sql cannot scan NULL into a json.RawMessage.
func (Engine) GoType(t spec.Type, nullable bool) gocode.Type {
	var inner gocode.Type
	switch t.Name {
	case "text", "varchar", "numeric", "uuid":
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
	case "timestamptz", "date":
		inner = timeTime
	case "jsonb":
		inner = jsonRaw
	case "bytea":
		return gocode.Bytes
	default:
		panic("mysql: unhandled type " + t.Name)
	}
	if nullable {
		return inner.Ptr()
	}
	return inner
}
