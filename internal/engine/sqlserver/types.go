package sqlserver

import (
	"fmt"
	"strings"
	"time"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/gocode"
	"github.com/queuegen/queuegen/internal/spec"
)

// Now is the database's clock in every statement queuegen writes: the
// current time in UTC. Times are stored in DATETIME2(6) columns as UTC, so
// what a statement compares and stores does not depend on the server's
// time zone (SYSDATETIME() would).
const Now = "SYSUTCDATETIME()"

// DateTime is the type of every time queuegen stores: UTC, to the
// microsecond, as on the other engines.
const DateTime = "DATETIME2(6)"

// sqlType is the SQL Server type of a spec type (arrays are refused by
// Check). Text is NVARCHAR: go-mssqldb sends Go strings as NVARCHAR, and a
// VARCHAR column compared with one would be converted row by row.
func sqlType(t spec.Type) string {
	switch t.Name {
	case "text":
		return "NVARCHAR(MAX)"
	case "varchar":
		return fmt.Sprintf("NVARCHAR(%d)", t.Mods[0])
	case "smallint":
		return "SMALLINT"
	case "integer":
		return "INT"
	case "bigint":
		return "BIGINT"
	case "boolean":
		return "BIT"
	case "real":
		return "REAL"
	case "double precision":
		return "FLOAT"
	case "numeric":
		if len(t.Mods) == 1 {
			return fmt.Sprintf("DECIMAL(%d)", t.Mods[0])
		}
		return fmt.Sprintf("DECIMAL(%d, %d)", t.Mods[0], t.Mods[1])
	case "uuid":
		return "UNIQUEIDENTIFIER"
	case "timestamptz":
		return DateTime
	case "date":
		return "DATE"
	case "jsonb":
		return "NVARCHAR(MAX)"
	case "bytea":
		return "VARBINARY(MAX)"
	}
	panic("sqlserver: unhandled type " + t.Name)
}

// defaultSQL are the spec's SQL defaults as SQL Server writes them.
var defaultSQL = map[string]string{
	"now()":             Now,
	"current_timestamp": Now,
	"clock_timestamp()": Now,
	"current_date":      "CAST(" + Now + " AS DATE)",
	"gen_random_uuid()": "NEWID()",
}

// Column is the table column of a spec column: its SQL Server type, NOT
// NULL unless nullable, and its default as a literal of the type.
func (Engine) Column(c *spec.Column) *catalog.Column {
	col := &catalog.Column{Name: c.Name, Type: sqlType(c.Type), NotNull: !c.Nullable, RenamedFrom: c.RenamedFrom, JSON: c.Type.Name == "jsonb"}
	switch {
	case c.Default != nil:
		col.Default = literal(c.Type, *c.Default)
	case c.DefaultSQL != "":
		col.Default = defaultSQL[c.DefaultSQL]
	}
	return col
}

// literal renders a default value the spec has validated for type t as a
// SQL Server literal of that type. Values reach SQL only as literals built
// here.
func literal(t spec.Type, v string) string {
	switch t.Name {
	case "smallint", "integer", "bigint", "numeric", "real", "double precision":
		return v
	case "boolean":
		if v == "true" {
			return "1"
		}
		return "0"
	case "timestamptz":
		at, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			panic("sqlserver: unvalidated timestamptz default " + v)
		}
		return "'" + at.UTC().Format("2006-01-02T15:04:05.000000") + "'"
	case "date", "uuid":
		return "'" + v + "'"
	}
	return quote(v)
}

// quote renders s as a Unicode string literal: N'…' with quotes doubled,
// and line breaks written as NCHAR(10) and NCHAR(13) joined with +. A
// literal then stays on one line: a line break inside one would be
// re-indented with the statement, and a backslash before one is T-SQL's
// line continuation, which drops both.
func quote(s string) string {
	var parts []string
	lit := func(p string) string { return "N'" + strings.ReplaceAll(p, "'", "''") + "'" }
	start := 0
	for i, r := range s {
		if r != '\n' && r != '\r' {
			continue
		}
		if i > start {
			parts = append(parts, lit(s[start:i]))
		}
		parts = append(parts, fmt.Sprintf("NCHAR(%d)", r))
		start = i + 1
	}
	if start < len(s) || len(parts) == 0 {
		parts = append(parts, lit(s[start:]))
	}
	return strings.Join(parts, " + ")
}

var (
	timeTime   = gocode.Named(gocode.Time.Ident("Time"))
	uniqueID   = gocode.Named(gocode.ImportPath("github.com/microsoft/go-mssqldb").Ident("UniqueIdentifier"))
	jsonRaw    = gocode.Nilable(gocode.JSON.Ident("RawMessage"))
	stringType = gocode.String
)

// GoType is the Go type of a column of type t in the code queuegen writes
// for go-mssqldb: a pointer for every nullable column but VARBINARY (nil
// is NULL), string for DECIMAL (go-mssqldb returns its digits), and
// go-mssqldb's UniqueIdentifier for UNIQUEIDENTIFIER, whose bytes SQL
// Server orders its own way.
func (Engine) GoType(t spec.Type, nullable bool) gocode.Type {
	var inner gocode.Type
	switch t.Name {
	case "text", "varchar", "numeric":
		inner = stringType
	case "uuid":
		inner = uniqueID
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
		panic("sqlserver: unhandled type " + t.Name)
	}
	if nullable {
		return inner.Ptr()
	}
	return inner
}
