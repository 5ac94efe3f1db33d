package mysql

import (
	"strings"

	"github.com/queuegen/queuegen/internal/catalog"
)

// sqlc's MySQL engine (TiDB's parser and sqlc's own catalog of MySQL
// functions) knows queuegen's MySQL in all but two points, which the
// engine adapts for it (engine.SqlcAdapter):
//
//   - Its catalog has UTC_TIMESTAMP only without the precision argument,
//     so sqlc reads UTC_TIMESTAMP(6) as UTC_TIMESTAMP() and the query text
//     it copies into its Go gets the precision back.
//   - Its parser takes few expression defaults (not the UTC clock), and
//     sqlc needs no defaults to type the queries: it reads the schema
//     without them.

// sqlcNow is Now as sqlc's catalog knows it.
const sqlcNow = "UTC_TIMESTAMP()"

// SqlcSchema is c without column defaults.
func (Engine) SqlcSchema(c *catalog.Catalog) *catalog.Catalog {
	out := *c
	strip := func(t *catalog.Table) *catalog.Table {
		if t == nil {
			return nil
		}
		t = t.Clone()
		for _, col := range t.Columns {
			col.Default = ""
		}
		return t
	}
	out.Registry, out.Periodic, out.Base = strip(c.Registry), strip(c.Periodic), strip(c.Base)
	out.Queues = make([]*catalog.Queue, len(c.Queues))
	for i, q := range c.Queues {
		cp := *q
		cp.Table = strip(q.Table)
		out.Queues[i] = &cp
	}
	return &out
}

// SqlcQueries writes Now as sqlc's catalog knows it.
func (Engine) SqlcQueries(sql string) string { return strings.ReplaceAll(sql, Now, sqlcNow) }

// SqlcGo gives Now its precision back in the query text of sqlc's Go.
func (Engine) SqlcGo(code string) string { return strings.ReplaceAll(code, sqlcNow, Now) }
