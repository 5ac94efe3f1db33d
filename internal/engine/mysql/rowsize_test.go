package mysql

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/mytest"
	"github.com/queuegen/queuegen/internal/spec"
)

// TestRowTooBigAgreesWithTheServer: for queue tables on each side of both
// row-size limits (MySQL's 65,535 bytes, InnoDB's in-page 8,126), built
// from every payload type, RowTooBig refuses exactly the tables the server
// refuses with Error 1118, "Row size too large". Each family of tables
// grows one column or one character at a time; the test finds where
// RowTooBig starts refusing and creates the tables just before and at that
// point on the server.
func TestRowTooBigAgreesWithTheServer(t *testing.T) {
	db := mytest.DB(t)
	col := func(name, typ string, nullable bool) *catalog.Column {
		st := spec.Type{Name: typ}
		if i := strings.IndexByte(typ, '('); i >= 0 {
			st.Name = typ[:i]
			for _, m := range strings.Split(strings.TrimSuffix(typ[i+1:], ")"), ",") {
				n, err := strconv.Atoi(strings.TrimSpace(m))
				if err != nil {
					t.Fatal(err)
				}
				st.Mods = append(st.Mods, n)
			}
		}
		return Engine{}.Column(&spec.Column{Name: name, Type: st, Nullable: nullable})
	}
	repeat := func(prefix, typ string, nullable bool, k int) []*catalog.Column {
		var cs []*catalog.Column
		for i := range k {
			cs = append(cs, col(fmt.Sprintf("%s%d", prefix, i), typ, nullable))
		}
		return cs
	}
	families := []struct {
		name   string
		unique bool
		cols   func(k int) []*catalog.Column // k from 1 up
	}{
		{"one wide varchar", false, func(k int) []*catalog.Column {
			return []*catalog.Column{col("a", fmt.Sprintf("varchar(%d)", 15000+k), false)}
		}},
		{"one wide nullable varchar, unique", true, func(k int) []*catalog.Column {
			return []*catalog.Column{col("a", fmt.Sprintf("varchar(%d)", 14000+k), true)}
		}},
		{"five wide varchars", false, func(k int) []*catalog.Column { return repeat("v", fmt.Sprintf("varchar(%d)", 2000+k), false, 5) }},
		{"a wide varchar and text columns", false, func(k int) []*catalog.Column {
			return append([]*catalog.Column{col("a", "varchar(15800)", false)}, repeat("t", "text", true, k)...)
		}},
		{"a wide varchar and jsonb, bytea columns", false, func(k int) []*catalog.Column {
			return append([]*catalog.Column{col("a", "varchar(15800)", false), col("b", "bytea", true)}, repeat("j", "jsonb", false, k)...)
		}},
	}
	// In-page families: varchar(63) columns kept whole in the page, then
	// one more type until the record is too long.
	for _, typ := range []string{"varchar(63)", "varchar(10)", "varchar(64)", "text", "smallint", "integer", "bigint", "boolean", "real",
		"double precision", "numeric(9, 2)", "numeric(30, 7)", "uuid", "timestamptz", "date", "jsonb"} {
		for _, nullable := range []bool{false, true} {
			families = append(families, struct {
				name   string
				unique bool
				cols   func(k int) []*catalog.Column
			}{fmt.Sprintf("varchar(63) columns, then %s (nullable %t)", typ, nullable), nullable, func(k int) []*catalog.Column {
				return append(repeat("v", "varchar(63)", false, 29), repeat("x", typ, nullable, k)...)
			}})
		}
	}
	create := func(name string, cols []*catalog.Column, unique bool) (*catalog.Table, error) {
		tbl := Engine{}.QueueTable(engine.QueueTable{Name: name, Payload: cols, Lease: true, Unique: unique})
		if _, err := db.Exec("DROP TABLE IF EXISTS " + name); err != nil {
			t.Fatal(err)
		}
		_, err := db.Exec(strings.TrimSpace(ddl{}.CreateTable(tbl)))
		return tbl, err
	}
	for i, f := range families {
		t.Run(f.name, func(t *testing.T) {
			first := 0 // the first k refused
			for k := 1; k < 2000; k++ {
				tbl := Engine{}.QueueTable(engine.QueueTable{Name: "t", Payload: f.cols(k), Lease: true, Unique: f.unique})
				if (Engine{}).RowTooBig(tbl) != "" {
					first = k
					break
				}
			}
			if first < 2 {
				t.Fatalf("RowTooBig refuses from k = %d: the family does not reach the limit from below", first)
			}
			for _, k := range []int{first - 1, first} {
				tbl, err := create(fmt.Sprintf("f%d_%d", i, k), f.cols(k), f.unique)
				why := Engine{}.RowTooBig(tbl)
				server, page := RowSize(tbl)
				refused := err != nil && strings.Contains(err.Error(), "1118")
				if err != nil && !refused {
					t.Fatalf("k = %d: %v", k, err)
				}
				if refused != (why != "") {
					t.Errorf("k = %d (computed %d bytes a row, %d in the page): the server refused: %t (%v); RowTooBig: %q", k, server, page, refused, err, why)
				}
			}
		})
	}
}
