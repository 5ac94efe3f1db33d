package mysql

import (
	"testing"

	tidb "github.com/pingcap/tidb/pkg/parser"
)

// TestKeywordsCoverSqlcParser: every word reserved by the parser sqlc
// reads MySQL with is refused as a name, or sqlc would fail on the
// generated queries instead of the spec on the name.
func TestKeywordsCoverSqlcParser(t *testing.T) {
	for _, k := range tidb.Keywords {
		if k.Reserved && !keywords[k.Word] {
			t.Errorf("%s is reserved by sqlc's MySQL parser but not in reservedWords", k.Word)
		}
	}
}
