package querycode

import (
	"fmt"
	"strings"
)

// query is one named query of a query file.
type query struct {
	// Name and Kind are from its "-- name: Name :kind" line.
	Name, Kind string
	// Doc are its comment lines, without "-- ".
	Doc []string
	// SQL is its text, without the comments above it.
	SQL string
	// Params are the names of its @parameters, in order of first use.
	Params []string
}

// parseFile splits a query file into its named queries: each starts at a
// "-- name: Name :kind" line, its comment lines follow, then its SQL.
func parseFile(data string) ([]*query, error) {
	var out []*query
	var cur *query
	var body []string
	flush := func() {
		if cur != nil {
			cur.SQL = strings.TrimSpace(strings.Join(body, "\n"))
			cur.Params = params(cur.SQL)
			out = append(out, cur)
		}
	}
	for _, line := range strings.Split(data, "\n") {
		if rest, ok := strings.CutPrefix(line, "-- name: "); ok {
			flush()
			f := strings.Fields(rest)
			if len(f) != 2 || !strings.HasPrefix(f[1], ":") {
				return nil, fmt.Errorf("bad query name line %q", line)
			}
			cur, body = &query{Name: f[0], Kind: f[1]}, nil
			continue
		}
		if cur == nil {
			continue
		}
		if c, ok := strings.CutPrefix(line, "-- "); ok && len(body) == 0 {
			cur.Doc = append(cur.Doc, c)
			continue
		}
		body = append(body, line)
	}
	flush()
	return out, nil
}

// params lists the @parameters of a statement in order of first use,
// skipping string literals, comments, @@ functions and the variables the
// query DECLAREs itself (the table variables OUTPUT … INTO writes).
func params(sql string) []string {
	var names []string
	seen := map[string]bool{}
	for _, line := range strings.Split(sql, "\n") {
		if rest, ok := strings.CutPrefix(line, "DECLARE @"); ok {
			name, _, _ := strings.Cut(rest, " ")
			seen[name] = true
		}
	}
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '\'':
			for i++; i < len(sql) && sql[i] != '\''; i++ {
			}
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '@' && i+1 < len(sql) && sql[i+1] == '@':
			i++
			for i+1 < len(sql) && isIdent(sql[i+1]) {
				i++
			}
		case c == '@':
			j := i + 1
			for j < len(sql) && isIdent(sql[j]) {
				j++
			}
			if name := sql[i+1 : j]; name != "" && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
			i = j - 1
		}
	}
	return names
}

// lastStatement is the last statement of sql, whose statements end with
// ";" at the end of a line: what a query that writes OUTPUT … INTO a table
// variable returns is the SELECT from it that ends the query.
func lastStatement(sql string) string {
	sql = strings.TrimSpace(sql)
	if i := strings.LastIndex(strings.TrimSuffix(sql, ";"), ";\n"); i >= 0 {
		return sql[i+2:]
	}
	return sql
}

// topLevel splits a column list at its commas outside parentheses and
// string literals, so that an expression's own commas (COALESCE's,
// CASE's) stay in its item.
func topLevel(list string) []string {
	var items []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(list); i++ {
		switch c := list[i]; {
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			items = append(items, list[start:i])
			start = i + 1
		}
	}
	return append(items, list[start:])
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// resultColumns lists what a query returns: the column list of its OUTPUT
// clause, or of its SELECT when it is one. Each item is a column name
// (what follows the last dot, or AS), or "*" for every column of the
// table. It is nil for a query that returns nothing.
func resultColumns(sql string) ([]string, error) {
	var list string
	if _, after, ok := strings.Cut(sql, "\nOUTPUT "); ok && !strings.Contains(strings.SplitN(after, "\n", 2)[0], " INTO @") {
		list, _, _ = strings.Cut(after, "\n")
		list = strings.TrimSuffix(strings.TrimSpace(list), ";")
	} else if after, ok := strings.CutPrefix(lastStatement(sql), "SELECT "); ok {
		list = after
		if i := strings.Index(list, "\nFROM"); i >= 0 {
			list = list[:i]
		} else if i := strings.Index(list, " FROM "); i >= 0 {
			list = list[:i]
		}
		list = strings.TrimSuffix(strings.TrimSpace(list), ";")
	} else {
		return nil, nil
	}
	var cols []string
	for _, item := range topLevel(list) {
		item = strings.TrimSpace(item)
		// The alias is what follows the item's last AS outside parentheses
		// (an AS inside, as CAST's, names a type).
		if i := strings.LastIndex(item, " AS "); i >= 0 && !strings.Contains(item[i:], ")") {
			item = item[i+len(" AS "):]
		}
		if i := strings.LastIndexByte(item, '.'); i >= 0 {
			item = item[i+1:]
		}
		for j := 0; j < len(item); j++ {
			if !isIdent(item[j]) && item != "*" {
				return nil, fmt.Errorf("result column %q is neither a column nor named with AS", item)
			}
		}
		cols = append(cols, item)
	}
	return cols, nil
}
