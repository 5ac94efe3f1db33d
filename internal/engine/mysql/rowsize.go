package mysql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/queuegen/queuegen/internal/catalog"
)

// Two limits on the size of a row, both checked by CREATE TABLE (Error
// 1118, "Row size too large"):
//
//   - MySQL's own (the server's, whatever the storage engine): the columns'
//     lengths in its record format, with a bit per nullable column,
//     at most 65,535 bytes; TEXT, JSON and BLOB values count only their
//     length and pointer (9 to 12 bytes).
//   - InnoDB's, in strict mode (the default): the longest record a row
//     could need in its clustered index page must be shorter than half a
//     page, 8,126 bytes with 16 KB pages. With ROW_FORMAT=DYNAMIC (the
//     default), a column that can exceed 255 bytes (TEXT, JSON, BLOB, a
//     VARCHAR of 64 utf8mb4 characters or more) may be stored off the
//     page and counts 21 bytes (a 20-byte pointer and a length byte); a
//     shorter one counts its longest value and a length byte, a
//     fixed-size one its size.
//
// Both were measured on MariaDB 10.11 with utf8mb4; MySQL 8 applies the
// same rules.
const (
	// MaxRowSize is MySQL's limit on a record.
	MaxRowSize = 65535
	// MaxPageRecord is the smallest record InnoDB (16 KB pages) refuses.
	MaxPageRecord = 8126
	// pageRecordHeader is InnoDB's record header (5 bytes) and the hidden
	// columns of a clustered index record: DB_TRX_ID (6) and DB_ROLL_PTR
	// (7).
	pageRecordHeader = 5 + 6 + 7
	// offPage is what a column stored off the page keeps in it.
	offPage = 20 + 1
	// mbMax is utf8mb4's longest character, in bytes.
	mbMax = 4
)

// RowTooBig says why rows of t could be too large for MySQL or InnoDB,
// with the computed size and the limit, or "".
func (Engine) RowTooBig(t *catalog.Table) string {
	server, page := RowSize(t)
	switch {
	case server > MaxRowSize:
		return fmt.Sprintf("its rows could take %d bytes, and MySQL allows %d bytes a row (counting each TEXT, JSON or BLOB column as 9 to 12 bytes, and VARCHAR(n) as 4n+2): use text for the widest varchar columns, or shorten them",
			server, MaxRowSize)
	case page >= MaxPageRecord:
		return fmt.Sprintf("its rows could need %d bytes in their InnoDB page, and InnoDB (16 KB pages, ROW_FORMAT=DYNAMIC) allows at most %d: a varchar of up to 63 characters is kept whole in the page (up to 253 bytes), a longer one or text only 21 bytes there; use text or varchar(64) or wider for some columns, or fewer columns",
			page, MaxPageRecord-1)
	}
	return ""
}

// RowSize is the longest row of t in bytes as MySQL's record counts it
// (server) and as InnoDB's clustered index page does (page).
func RowSize(t *catalog.Table) (server, page int) {
	nullable := 0
	for _, c := range t.Columns {
		s, p := columnSize(c.Type)
		server += s
		page += p
		if !c.NotNull {
			nullable++
		}
	}
	nullBytes := (nullable + 7) / 8
	return server + nullBytes, page + pageRecordHeader + nullBytes
}

// columnSize is a column's bytes in MySQL's record and in InnoDB's page,
// for a column type as this package writes it.
func columnSize(typ string) (server, page int) {
	name, args := typ, ""
	if i := strings.IndexAny(typ, " ("); i >= 0 {
		name = typ[:i]
		if typ[i] == '(' {
			if j := strings.IndexByte(typ, ')'); j > i {
				args = typ[i+1 : j]
			}
		}
	}
	fixed := func(n int) (int, int) { return n, n }
	switch name {
	case "TINYINT", "BOOLEAN", "ENUM":
		// queuegen's ENUMs have fewer than 256 values.
		return fixed(1)
	case "SMALLINT":
		return fixed(2)
	case "INT":
		return fixed(4)
	case "BIGINT", "DOUBLE":
		return fixed(8)
	case "FLOAT":
		return fixed(4)
	case "DATE":
		return fixed(3)
	case "DATETIME":
		frac, _ := strconv.Atoi(args)
		return fixed(5 + (frac+1)/2)
	case "DECIMAL":
		p, s := decimalArgs(args)
		return fixed(decimalBytes(p-s) + decimalBytes(s))
	case "TEXT":
		return 10, offPage
	case "JSON", "LONGBLOB", "LONGTEXT":
		return 12, offPage
	case "CHAR", "VARCHAR":
		// With utf8mb4 InnoDB stores CHAR with a length, as VARCHAR.
		n, _ := strconv.Atoi(args)
		max := n * mbMax
		length := 1
		if max > 255 {
			length = 2
		}
		server = max + length
		if name == "CHAR" {
			server = max
		}
		if max > 255 {
			return server, offPage
		}
		return server, max + 1
	}
	panic("mysql: no row size for column type " + typ)
}

// decimalArgs reads DECIMAL's precision and scale.
func decimalArgs(args string) (p, s int) {
	ps := strings.Split(args, ",")
	p, _ = strconv.Atoi(strings.TrimSpace(ps[0]))
	if len(ps) == 2 {
		s, _ = strconv.Atoi(strings.TrimSpace(ps[1]))
	}
	return p, s
}

// decimalBytes is the bytes of n decimal digits in DECIMAL's binary form:
// 4 for each 9 digits, and part of 4 for the rest.
func decimalBytes(n int) int {
	return n/9*4 + [9]int{0, 1, 1, 2, 2, 3, 3, 4, 4}[n%9]
}
