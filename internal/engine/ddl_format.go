package engine

import (
	"strings"

	"github.com/queuegen/queuegen/internal/catalog"
)

// The layout of CREATE TABLE shared by the engines' DDL builders: aligned
// column definitions with their comments, one item per line, and the goose
// annotations that keep a statement whole.

// GooseGuard keeps goose from splitting a statement inside a default:
// goose ends a statement at a line ending with a semicolon, and a literal
// may hold one (or a newline, or "--"). Such a statement is marked as one.
func GooseGuard(stmt string, defaults ...string) string {
	for _, def := range defaults {
		if strings.ContainsAny(def, ";\n") || strings.Contains(def, "--") {
			return "-- +goose StatementBegin\n" + stmt + "\n-- +goose StatementEnd"
		}
	}
	return stmt
}

// Defaults lists the columns' defaults, for GooseGuard.
func Defaults(cs []*catalog.Column) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Default
	}
	return out
}

// JoinItems joins the items of a CREATE TABLE body, each indented, with a
// comma after every item but the last. An item may have comment lines
// above it (lines before its last) and a trailing comment after "\x00"
// (see ColumnLines); the comma goes before the trailing comment.
func JoinItems(items []string) string {
	var out []string
	for i, it := range items {
		comma := ","
		if i == len(items)-1 {
			comma = ""
		}
		ls := strings.Split(it, "\n")
		for _, l := range ls[:len(ls)-1] {
			out = append(out, "    "+l)
		}
		last := ls[len(ls)-1]
		if def, comment, ok := strings.Cut(last, "\x00"); ok {
			if comma == "" {
				comma = " " // keeps the trailing comment in line with those above
			}
			out = append(out, "    "+def+comma+comment)
		} else {
			out = append(out, "    "+last+comma)
		}
	}
	return strings.Join(out, "\n")
}

// ColumnLines aligns column definitions: name, type, NOT NULL and
// default, comment. The comment is separated by "\x00" so that JoinItems
// can put the comma before it. A type or definition too long to align
// with the others (a generated column, a long default) is followed by one
// space, so as not to push every other line to the right.
func ColumnLines(cs []*catalog.Column) []string {
	const maxTypeW, maxDefW = 24, 64
	nameW, typeW, defW := 0, 0, 0
	rest := make([]string, len(cs))
	for i, c := range cs {
		var r []string
		if c.NotNull {
			r = append(r, "NOT NULL")
		}
		if c.Default != "" {
			r = append(r, "DEFAULT "+c.Default)
		}
		rest[i] = strings.Join(r, " ")
		nameW = max(nameW, len(c.Name))
		if rest[i] != "" && len(c.Type) <= maxTypeW {
			typeW = max(typeW, len(c.Type))
		}
	}
	defs := make([]string, len(cs))
	for i, c := range cs {
		defs[i] = pad(c.Name, nameW) + " " + c.Type
		if rest[i] != "" {
			defs[i] = pad(c.Name, nameW) + " " + pad(c.Type, typeW) + " " + rest[i]
		}
		if c.Comment != "" && len(defs[i]) <= maxDefW {
			defW = max(defW, len(defs[i]))
		}
	}
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = defs[i]
		if c.Comment != "" {
			out[i] = defs[i] + "\x00" + strings.Repeat(" ", max(0, defW-len(defs[i]))) + " -- " + c.Comment
		}
	}
	return out
}

// ColumnDef is one column's definition: name, type, NOT NULL, default.
func ColumnDef(c *catalog.Column) string {
	s := c.Name + " " + c.Type
	if c.NotNull {
		s += " NOT NULL"
	}
	if c.Default != "" {
		s += " DEFAULT " + c.Default
	}
	return s
}

func pad(s string, w int) string { return s + strings.Repeat(" ", max(0, w-len(s))) }

// Lines writes each line of ls, ending it with a newline.
func Lines(b *strings.Builder, ls []string) {
	for _, l := range ls {
		b.WriteString(l + "\n")
	}
}
