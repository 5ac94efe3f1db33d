package mysql

import (
	"regexp"
	"strings"

	"github.com/queuegen/queuegen/internal/catalog"
)

// sqlc's MySQL engine (TiDB's parser and sqlc's own catalog of MySQL
// functions) knows queuegen's MySQL in all but two points, which the
// engine adapts for it (engine.SqlcAdapter), and two it is told
// differently on purpose:
//
//   - Its catalog has UTC_TIMESTAMP only without the precision argument,
//     so sqlc reads UTC_TIMESTAMP(6) as UTC_TIMESTAMP() and the query text
//     it copies into its Go gets the precision back.
//   - Its parser takes few expression defaults (not the UTC clock), and
//     sqlc needs no defaults to type the queries: it reads the schema
//     without them.
//   - An archive's finished_at, NOT NULL as it is in the archive's
//     primary key, it is told is nullable, as in the queue's table, and
//     it is told nothing of the partitions: the archive's row type is
//     then the queue's, field for field, and Get converts one to the
//     other.
//   - The exact reads of real columns (ExactExpr: "c * 1e0 AS exact_c")
//     sqlc would type as an integer; it is given the column itself
//     ("c AS exact_c"), which it types as the column (float32, a pointer
//     when nullable), and its Go gets the expression back.

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
		if cp.Archive = strip(q.Archive); cp.Archive != nil {
			cp.Archive.PartitionBy = ""
			for _, col := range cp.Archive.Columns {
				if col.Name == "finished_at" {
					col.NotNull = false
				}
			}
		}
		cp.Backlog = strip(q.Backlog)
		out.Queues[i] = &cp
	}
	return &out
}

var (
	exactExpr   = regexp.MustCompile(`\b(\w+) \* 1e0 AS (exact_\w+)\b`)
	exactColumn = regexp.MustCompile(`\b(\w+) AS (exact_\w+)\b`)
)

// SqlcQueries writes Now as sqlc's catalog knows it, and each exact read
// as the column it reads.
func (Engine) SqlcQueries(sql string) string {
	return exactExpr.ReplaceAllString(strings.ReplaceAll(sql, Now, sqlcNow), "$1 AS $2")
}

// SqlcGo gives Now its precision back in the query text of sqlc's Go, and
// the exact reads their expression.
func (e Engine) SqlcGo(code string) string {
	return exactColumn.ReplaceAllString(strings.ReplaceAll(code, sqlcNow, Now), e.ExactExpr("$1")+" AS $2")
}
