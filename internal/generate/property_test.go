package generate_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/generate"
	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/internal/model"
	"github.com/queuegen/queuegen/internal/spec"
)

var (
	propertyN    = flag.Int("property.n", 16, "how many random specs TestAcceptedSpecsWork generates")
	propertySeed = flag.Uint64("property.seed", 1, "the seed of TestAcceptedSpecsWork's random specs")
)

// TestAcceptedSpecsWork is a property test: for random specs (names of
// every length up to the limit, every column type, nullable or not,
// defaults that are hostile to SQL and to goose, both modes, every queue
// option, periodic jobs with awkward constants; and names that collide
// with what queuegen makes: queue names starting with _ or named schema,
// columns and migrations tables named like the tables the migrations
// create, jsonb defaults holding \u0000, and, on MySQL, rows wide enough
// to pass MySQL's or InnoDB's row-size limit), whenever the spec is
// accepted, what generate emits must migrate up, down and up again on a
// real database of its engine (every third spec is for MySQL), and its Go
// must compile and vet. A spec that is refused must be refused before
// anything is generated (by the parser or the model, with a position).
func TestAcceptedSpecsWork(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	goSum, _ := os.ReadFile(filepath.Join(root, "go.sum"))
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/property\n\ngo 1.26\n\nrequire github.com/queuegen/queuegen v0.0.0\n\nreplace github.com/queuegen/queuegen => "+root+"\n"), 0o644)
	os.WriteFile(filepath.Join(mod, "go.sum"), goSum, 0o644)

	accepted := 0
	t.Run("specs", func(t *testing.T) {
		for i := range *propertyN {
			seed := *propertySeed*1000 + uint64(i)
			eng := dburl.PostgreSQL
			if i%3 == 2 {
				eng = dburl.MySQL
			}
			text := randomSpec(rand.New(rand.NewPCG(seed, seed)), fmt.Sprintf("p%d", i), eng)
			s, err := spec.Parse("queuegen.yaml", []byte(text))
			if err == nil {
				_, err = model.Build(s)
			}
			if err != nil {
				for _, e := range err.(spec.Errors) {
					if e.Line == 0 {
						t.Errorf("seed %d: a refusal without a position: %v", seed, e)
					}
				}
				continue
			}
			accepted++
			dir := filepath.Join(mod, fmt.Sprintf("p%d", i))
			os.MkdirAll(dir, 0o755)
			specPath := filepath.Join(dir, "queuegen.yaml")
			os.WriteFile(specPath, []byte(text), 0o644)
			out, err := generate.Generate(specPath, generate.Options{})
			if err != nil {
				t.Errorf("seed %d: an accepted spec failed to generate: %v\n%s", seed, err, text)
				continue
			}
			if _, err := out.Write(); err != nil {
				t.Fatal(err)
			}
			t.Run(fmt.Sprintf("migrate-%d", i), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				db := dbtest.New(t, eng)
				opts := []migrate.Option{migrate.Table(s.MigrationsTable)}
				if eng == dburl.PostgreSQL {
					opts = append(opts, migrate.Schema(s.Schema))
				}
				m, err := migrate.Open(db.Address, filepath.Join(dir, "migrations"), opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				for _, action := range []string{"up", "reset", "up"} {
					if _, err := m.Migrate(ctx, action, 0); err != nil {
						t.Errorf("seed %d: migrate %s: %v\n%s", seed, action, err, text)
						return
					}
				}
			})
		}
	})
	if accepted < *propertyN/4 {
		t.Errorf("only %d of %d random specs were accepted: the generator tests too little", accepted, *propertyN)
	}
	t.Logf("%d of %d random specs accepted", accepted, *propertyN)
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir = mod
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	vet := exec.Command("go", "vet", "./...")
	vet.Dir = mod
	if out, err := vet.CombinedOutput(); err != nil {
		t.Errorf("the Go generated from accepted specs does not compile or vet: %v\n%s", err, out)
	}
}

// randomSpec writes a random spec for engine eng; names are prefixed to
// keep the specs' Go packages apart. Now and then a name collides with
// one queuegen makes (see TestAcceptedSpecsWork), and on MySQL a payload
// is wide enough to reach a row-size limit.
func randomSpec(r *rand.Rand, pkg, eng string) string {
	mysql := eng == dburl.MySQL
	// One spec in four is hostile: in it, names collide with queuegen's
	// now and then.
	hostile := r.IntN(4) == 0
	odds := func(n int) bool { return hostile && r.IntN(n) == 0 }
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nengine: %s\npackage: {name: %s, dir: jobs}\nmigrations: migrations\nqueries: queries\n", eng, pkg)
	schema := ""
	if !mysql && r.IntN(3) == 0 {
		schema = ident(r, 1+r.IntN(20))
		fmt.Fprintf(&b, "schema: %s\n", schema)
	}
	// The queues' names and tables, first: columns and the migrations
	// table may be named like any of them.
	type queue struct{ name, table string }
	var queues []queue
	tables := []string{"queuegen_queues", "queuegen_periodic", "queuegen_db_version"}
	if !mysql {
		tables = append(tables, "base_queue")
	}
	for range 1 + r.IntN(3) {
		q := queue{name: ident(r, 1+r.IntN(57))}
		switch {
		case odds(6):
			q.name = "_" + ident(r, 1+r.IntN(20))
		case odds(12):
			q.name = "schema"
		}
		q.table = q.name + "_queue"
		if r.IntN(3) == 0 {
			q.table = ident(r, 1+r.IntN(63))
		}
		queues = append(queues, q)
		tables = append(tables, q.table)
		if schema != "" {
			tables = append(tables, schema+"_"+q.table)
		}
	}
	clash := func() string { return tables[r.IntN(len(tables))] }
	if odds(4) {
		fmt.Fprintf(&b, "migrations_table: %s\n", clash())
	}
	if r.IntN(2) == 0 {
		b.WriteString("base:\n  columns:\n")
		for range 1 + r.IntN(3) {
			name := "b_" + ident(r, 1+r.IntN(10))
			if odds(6) {
				name = clash()
			}
			fmt.Fprintf(&b, "    %s: %s\n", name, column(r, true, mysql))
		}
	}
	b.WriteString("queues:\n")
	for _, q := range queues {
		fmt.Fprintf(&b, "  - name: %s\n", q.name)
		if q.table != q.name+"_queue" {
			fmt.Fprintf(&b, "    table: %s\n", q.table)
		}
		tx := r.IntN(3) == 0
		if tx {
			b.WriteString("    mode: transaction\n")
		}
		opts := []string{"inherits: false", "priority: true", "unique: true", "notify: true", "lock: nowait", "on_success: keep"}
		if mysql {
			opts = []string{"inherits: false", "priority: true", "unique: true", "lock: nowait", "on_success: keep"}
		}
		for _, opt := range opts {
			if r.IntN(3) == 0 {
				fmt.Fprintf(&b, "    %s\n", opt)
			}
		}
		if r.IntN(3) == 0 {
			b.WriteString("    retention: {dead: 7d}\n")
		}
		switch r.IntN(4) {
		case 0: // JSON document of declared fields
			b.WriteString("    payload:\n      json:\n")
			if odds(3) {
				fmt.Fprintf(&b, "        column: %s\n", clash())
			}
			b.WriteString("        fields:\n")
			for range 1 + r.IntN(4) {
				fmt.Fprintf(&b, "          %s: %s\n", "f_"+ident(r, 1+r.IntN(12)), jsonField(r, mysql))
			}
		case 1: // JSON document of an application's type
			b.WriteString("    periodic:\n      - {name: tick, every: 1h, payload: {a: \"x'\\n;--\", b: [1, 2.5, null], c: {d: true}}}\n")
			b.WriteString("    payload:\n      json:\n        go_type: {import: encoding/json, type: RawMessage}\n")
		default:
			cols := map[string]string{}
			for range 1 + r.IntN(6) {
				cols["c_"+ident(r, 1+r.IntN(20))] = column(r, false, mysql)
			}
			if odds(3) {
				cols[clash()] = column(r, false, mysql)
			}
			if mysql && r.IntN(2) == 0 {
				// Wide rows: a few long varchars (MySQL's 65,535 bytes
				// a row), or many short ones kept whole in the page
				// (InnoDB's 8,126).
				if r.IntN(2) == 0 {
					for range 1 + r.IntN(5) {
						cols["w_"+ident(r, 1+r.IntN(20))] = fmt.Sprintf("{type: \"varchar(%d)\", nullable: %t}", 2000+r.IntN(14384), r.IntN(2) == 0)
					}
				} else {
					for range 20 + r.IntN(20) {
						cols["w_"+ident(r, 1+r.IntN(20))] = fmt.Sprintf("{type: \"varchar(%d)\", nullable: %t}", 40+r.IntN(24), r.IntN(2) == 0)
					}
				}
			}
			if r.IntN(2) == 0 {
				b.WriteString("    periodic:\n      - name: tick\n        cron: \"*/5 * * * *\"\n        payload: {}\n")
			}
			b.WriteString("    payload:\n      columns:\n")
			names := make([]string, 0, len(cols))
			for n := range cols {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				fmt.Fprintf(&b, "        %s: %s\n", n, cols[n])
			}
		}
	}
	return b.String()
}

// ident is a random identifier of length n: lower-case letters, digits
// and underscores, starting with a letter.
func ident(r *rand.Rand, n int) string {
	const first, rest = "abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz0123456789_"
	b := []byte{first[r.IntN(len(first))]}
	for len(b) < n {
		b = append(b, rest[r.IntN(len(rest))])
	}
	return string(b)
}

var types = []string{"text", "varchar(7)", "smallint", "integer", "bigint", "boolean", "numeric", "numeric(9, 2)", "real",
	"double precision", "uuid", "timestamptz", "date", "jsonb", "bytea"}

// mysqlTypes are the types MySQL serves (no arrays, no unconstrained
// numeric).
var mysqlTypes = []string{"text", "varchar(7)", "varchar(200)", "smallint", "integer", "bigint", "boolean", "numeric(9, 2)", "real",
	"double precision", "uuid", "timestamptz", "date", "jsonb", "bytea"}

// hostile are text defaults that once broke generated migrations.
var hostile = []string{`it's`, "Regards;\\nThe team", "a -- b", "$$; DROP TABLE x; --", `back\\slash`, `"quoted"`, "é ✓ 日本", "semi;", "x;\\n-- y", ""}

func column(r *rand.Rand, forBase, mysql bool) string {
	t := types[r.IntN(len(types))]
	if mysql {
		t = mysqlTypes[r.IntN(len(mysqlTypes))]
	}
	nullable := r.IntN(2) == 0
	if forBase {
		nullable = true // a JSON-payload queue cannot set a base column
	}
	if !forBase && !mysql && r.IntN(5) == 0 && t != "bytea" && t != "jsonb" {
		return fmt.Sprintf("{type: \"%s[]\", nullable: %t}", t, nullable)
	}
	def := ""
	if r.IntN(2) == 0 {
		switch t {
		case "text", "varchar(7)", "varchar(200)":
			if d := hostile[r.IntN(len(hostile))]; t == "text" || len([]rune(d)) <= 7 {
				def = fmt.Sprintf(", default: \"%s\"", d)
			}
		case "smallint", "integer", "bigint":
			def = fmt.Sprintf(", default: %d", r.IntN(1000)-500)
		case "numeric", "numeric(9, 2)", "real", "double precision":
			def = ", default: 1.25"
		case "boolean":
			def = ", default: true"
		case "uuid":
			def = ", default_sql: gen_random_uuid()"
		case "timestamptz":
			def = []string{", default_sql: now()", ", default: 2026-01-02T03:04:05Z"}[r.IntN(2)]
		case "date":
			def = ", default_sql: current_date"
		case "jsonb":
			def = `, default: '{"a": "b;\n--"}'`
			if r.IntN(6) == 0 { // \u0000 (jsonb cannot hold it), or an escaped backslash
				def = []string{`, default: '{"a": "\u0000"}'`, `, default: '{"a\u0000": 1}'`, `, default: '{"a": "\\u0000"}'`}[r.IntN(3)]
			}
		}
	}
	return fmt.Sprintf("{type: \"%s\", nullable: %t%s}", t, nullable, def)
}

func jsonField(r *rand.Rand, mysql bool) string {
	t := types[r.IntN(len(types))]
	if r.IntN(4) == 0 && !mysql && t != "jsonb" && t != "bytea" {
		t += "[]"
	}
	return fmt.Sprintf("{type: \"%s\", nullable: %t}", t, r.IntN(2) == 0)
}
