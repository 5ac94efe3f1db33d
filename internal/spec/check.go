package spec

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/queuegen/queuegen/internal/gocode"
)

// crossChecks finds problems that involve more than one key: names used
// twice, payload columns that shadow bookkeeping or base columns, and Go
// names that would collide in the generated package.
func (p *parser) crossChecks(n *yaml.Node, s *Spec) {
	at := func(pos Pos, key, format string, args ...any) {
		p.errs = append(p.errs, &Error{File: p.file, Line: pos.Line, Column: pos.Column, Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	baseCols := map[string]bool{}
	for _, c := range s.Base.Columns {
		if slices.Contains(QueueColumns, c.Name) {
			at(c.Pos, "base.columns."+c.Name, "%q is a queue bookkeeping column (%s); choose another name", c.Name, strings.Join(QueueColumns, ", "))
		}
		baseCols[c.Name] = true
	}
	names := map[string]*Queue{}
	goNames := map[string]*Queue{}
	tables := map[string]string{s.Base.Table: "the base table", s.MigrationsTable: "the migrations' version table (migrations_table)",
		"queuegen_queues": "queuegen's queue registry", "queuegen_periodic": "queuegen's periodic-ticks table", "queuegen_nodes": "queuegen's nodes table"}
	for _, q := range s.Queues {
		key := "queues[" + q.Name + "]"
		if prev := names[q.Name]; prev != nil {
			at(q.Pos, key+".name", "queue %q is declared twice (first at line %d)", q.Name, prev.Pos.Line)
			continue
		}
		names[q.Name] = q
		namePos := q.Pos
		if pos, ok := p.keys[key+".name"]; ok {
			namePos = pos
		}
		if strings.HasPrefix(q.Name, "_") {
			at(namePos, key+".name", "queue %q starts with _, and the Go tool ignores files whose names start with _ or . (it would skip %s_queue.go and %s.sql.go, and the package would not build); start the name with a letter", q.Name, q.Name, q.Name)
		}
		if q.Name == "schema" {
			at(namePos, key+".name", "queue %q would write its queries to schema.sql in the queries directory, the file sqlc reads the tables from; choose another name", q.Name)
		}
		if c := buildConstraint(q.Name); c != "" {
			at(q.Pos, key+".name", "queue %q ends in _%s, and Go builds a file named after it (%s.sql.go) only for %s; choose another name", q.Name, c, q.Name, c)
		}
		if prev := goNames[GoName(q.Name)]; prev != nil {
			at(q.Pos, key+".name", "queue %q and queue %q both become the Go name %s; rename one", q.Name, prev.Name, GoName(q.Name))
		}
		goNames[GoName(q.Name)] = q
		if what, ok := tables[q.Table]; ok && q.Table != "" {
			at(q.Pos, key+".table", "table %q is already used by %s", q.Table, what)
		}
		tables[q.Table] = fmt.Sprintf("queue %q", q.Name)

		cols := q.Payload.Columns
		if j := q.Payload.JSON; j != nil && q.Inherits {
			// A JSON payload cannot carry the base table's extra columns:
			// they take their default, so they must have one.
			for _, c := range s.Base.Columns {
				if !c.Nullable && !c.HasDefault() {
					at(q.Pos, key+".payload.json", "base column %q is NOT NULL without a default, and a JSON-payload queue cannot set it; give it a default or make it nullable, or set inherits: false", c.Name)
				}
			}
		}
		if j := q.Payload.JSON; j != nil {
			cols = []*Column{{Pos: q.Pos, Name: j.Column}}
			p.checkGoNames(j.Fields, key+".payload.json.fields", at)
		}
		for _, c := range cols {
			ck := key + ".payload.columns." + c.Name
			if q.Payload.JSON != nil {
				ck = key + ".payload.json.column"
			}
			if slices.Contains(QueueColumns, c.Name) {
				at(c.Pos, ck, "%q is a queue bookkeeping column (%s); choose another name", c.Name, strings.Join(QueueColumns, ", "))
			}
			for _, other := range QueueColumns {
				if other != c.Name && GoName(other) == GoName(c.Name) {
					at(c.Pos, ck, "%q becomes the Go field %s, as the bookkeeping column %q does; choose another name", c.Name, GoName(c.Name), other)
				}
			}
			if q.Inherits {
				for _, b := range s.Base.Columns {
					if b.Name != c.Name && GoName(b.Name) == GoName(c.Name) {
						at(c.Pos, ck, "%q and the base column %q both become the Go field %s; rename one", c.Name, b.Name, GoName(c.Name))
					}
				}
			}
			if msg, ok := p.rules.DefaultedColumns[c.Name]; ok && c.HasDefault() {
				at(c.Pos, ck, "%s", msg)
			}
			if slices.Contains(QueryParams, c.Name) {
				at(c.Pos, ck, "%q is the name of a parameter of the generated queries (%s); choose another name", c.Name, strings.Join(QueryParams, ", "))
			}
			if q.Inherits && baseCols[c.Name] {
				at(c.Pos, ck, "%q is already a column of the base table %s", c.Name, s.Base.Table)
			}
		}
		p.checkGoNames(q.Payload.Columns, key+".payload.columns", at)
		p.checkPeriodic(s, q, key, at)
	}
}

// checkPeriodic checks each periodic job's fixed payload against the
// queue's payload: known fields, and values of a type queuegen can write
// as Go constants.
func (p *parser) checkPeriodic(s *Spec, q *Queue, key string, at func(Pos, string, string, ...any)) {
	if len(q.Periodic) == 0 {
		return
	}
	fields := map[string]*Column{}
	switch {
	case q.Payload.JSON != nil && q.Payload.JSON.GoType != nil:
		// Any JSON document, decoded into the Go type when the scheduler
		// starts; it must be one.
		for _, pj := range q.Periodic {
			if pj.node != nil && p.jsonable(pj.node, pj.key) && holdsNUL(pj.node) {
				at(pj.Pos, pj.key, "the payload holds a NUL character (\\0 or \\u0000), which PostgreSQL's jsonb cannot store (every push of the job would fail there; queuegen stores no NUL on any engine); remove it")
			}
		}
		return
	case q.Payload.JSON != nil:
		for _, c := range q.Payload.JSON.Fields {
			fields[c.Name] = c
		}
	default:
		if q.Inherits {
			for _, c := range s.Base.Columns {
				fields[c.Name] = c
			}
		}
		for _, c := range q.Payload.Columns {
			fields[c.Name] = c
		}
	}
	for _, pj := range q.Periodic {
		names := make([]string, 0, len(pj.Payload))
		for name := range pj.Payload {
			names = append(names, name)
		}
		sortStrings(names)
		for _, name := range names {
			k := fmt.Sprintf("%s.periodic[%s].payload.%s", key, pj.Name, name)
			c := fields[name]
			if c == nil {
				at(pj.Pos, k, "the payload of queue %s has no field %q", q.Name, name)
				continue
			}
			if msg := checkConstant(c.Type, pj.Payload[name]); msg != "" {
				at(pj.Pos, k, "%s", msg)
			}
		}
	}
}

// checkConstant says what is wrong with v as a fixed value of type t.
func checkConstant(t Type, v string) string {
	if t.Array {
		return "fixed values of array fields are not supported; leave the field out"
	}
	switch t.Name {
	case "text", "varchar":
		if v == "\x00" {
			return "want a single value"
		}
		if strings.ContainsRune(v, 0) {
			return "the value holds a NUL character, which PostgreSQL's text cannot store (every push of the job would fail there; queuegen stores no NUL on any engine); remove it"
		}
		if len(t.Mods) == 1 && len([]rune(v)) > t.Mods[0] {
			return fmt.Sprintf("%q is longer than varchar(%d)", v, t.Mods[0])
		}
	case "smallint", "integer", "bigint":
		bits := map[string]int{"smallint": 16, "integer": 32, "bigint": 64}[t.Name]
		if _, err := strconv.ParseInt(v, 10, bits); err != nil {
			return fmt.Sprintf("want a whole number that fits %s, got %q", t.Name, v)
		}
	case "boolean":
		if v != "true" && v != "false" {
			return fmt.Sprintf("want true or false, got %q", v)
		}
	case "real", "double precision":
		bits := 64
		if t.Name == "real" {
			bits = 32
		}
		if f, err := strconv.ParseFloat(v, bits); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("want a finite number that fits %s, got %q", t.Name, v)
		}
	default:
		return fmt.Sprintf("fixed values of type %s are not supported; leave the field out (it gets its zero value)", t.Name)
	}
	return ""
}

// holdsNUL reports whether any key or value under n holds U+0000.
func holdsNUL(n *yaml.Node) bool {
	if strings.ContainsRune(n.Value, 0) {
		return true
	}
	for _, c := range n.Content {
		if holdsNUL(c) {
			return true
		}
	}
	return false
}

// buildConstraint is the GOOS or GOARCH that a file named name.sql.go is
// built for alone, as go/build reads file names, or "".
func buildConstraint(name string) string {
	parts := strings.Split(name, "_")
	if len(parts) < 2 {
		return ""
	}
	last := parts[len(parts)-1]
	if goOS[last] || goArch[last] {
		return last
	}
	return ""
}

// goOS and goArch are the operating systems and architectures go/build
// knows (its knownOS and knownArch).
var (
	goOS = map[string]bool{"aix": true, "android": true, "darwin": true, "dragonfly": true, "freebsd": true, "hurd": true,
		"illumos": true, "ios": true, "js": true, "linux": true, "nacl": true, "netbsd": true, "openbsd": true, "plan9": true,
		"solaris": true, "wasip1": true, "windows": true, "zos": true}
	goArch = map[string]bool{"386": true, "amd64": true, "amd64p32": true, "arm": true, "armbe": true, "arm64": true, "arm64be": true,
		"loong64": true, "mips": true, "mipsle": true, "mips64": true, "mips64le": true, "mips64p32": true, "mips64p32le": true,
		"ppc": true, "ppc64": true, "ppc64le": true, "riscv": true, "riscv64": true, "s390": true, "s390x": true, "sparc": true,
		"sparc64": true, "wasm": true}
)

// checkGoNames reports columns whose Go field names collide ("a_b" and
// "a__b" are both AB).
func (p *parser) checkGoNames(cols []*Column, key string, at func(Pos, string, string, ...any)) {
	seen := map[string]string{}
	for _, c := range cols {
		g := GoName(c.Name)
		if prev, ok := seen[g]; ok && prev != c.Name {
			at(c.Pos, key+"."+c.Name, "%q and %q both become the Go field %s; rename one", c.Name, prev, g)
		}
		seen[g] = c.Name
	}
}

// GoName is the exported Go name for an SQL identifier, spelled the way sqlc
// spells struct and field names (so the accessors and sqlc's code agree):
// each _-separated part capitalised, Go's initialisms in capitals
// (gocode.Name: user_id → UserID, url → URL).
func GoName(ident string) string { return gocode.Name(ident) }

func sortStrings(s []string) { sort.Strings(s) }
