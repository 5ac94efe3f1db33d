package ops

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// myColumn is a payload column and how its values render in JSON.
type myColumn struct {
	name string
	kind columnKind
}

type columnKind int

const (
	kindString columnKind = iota
	kindJSON
	kindBool
	kindNumber
	kindTime
	kindDate
	kindBytes
	// kindReal is a single-precision float the driver returns widened
	// to a float64 (go-mssqldb's REAL): rendered in float32's digits.
	kindReal
)

// payloadColumns reads q's payload columns from the catalog: every
// column but the bookkeeping ones (unique_active among them), keyed as
// PostgreSQL's jsonb orders keys, shortest first, then in byte order;
// and whether the table has the failures column (one whose migration
// adding it is not yet applied has not).
func (m *myBackend) payloadColumns(ctx context.Context, q Queue) (cols []myColumn, failures bool, err error) {
	rows, err := m.db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, q.Table)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	longtext, found := false, false
	for rows.Next() {
		var name, dataType, columnType string
		if err := rows.Scan(&name, &dataType, &columnType); err != nil {
			return nil, false, err
		}
		found = true
		failures = failures || name == "failures"
		if slices.Contains(bookkeeping, name) || name == "unique_active" {
			continue
		}
		kind := kindString
		switch dataType = strings.ToLower(dataType); dataType {
		case "json":
			kind = kindJSON
		case "tinyint":
			kind = kindNumber
			if strings.HasPrefix(strings.ToLower(columnType), "tinyint(1)") {
				kind = kindBool
			}
		case "smallint", "mediumint", "int", "integer", "bigint", "decimal", "numeric", "float", "double", "real", "year":
			kind = kindNumber
		case "datetime", "timestamp":
			kind = kindTime
		case "date":
			kind = kindDate
		case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "bit":
			kind = kindBytes
		case "longtext":
			longtext = true
		}
		cols = append(cols, myColumn{name: name, kind: kind})
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	if !found {
		return nil, false, fmt.Errorf("queue %s: no table %s in database %s", q.Name, q.Table, m.database)
	}
	if longtext {
		// MariaDB's JSON is LONGTEXT with a json_valid check named after
		// the column.
		json, err := m.mariaDBJSON(ctx, q.Table)
		if err != nil {
			return nil, false, err
		}
		for i := range cols {
			if json[cols[i].name] {
				cols[i].kind = kindJSON
			}
		}
	}
	slices.SortStableFunc(cols, func(a, b myColumn) int {
		return cmp.Or(cmp.Compare(len(a.name), len(b.name)), strings.Compare(a.name, b.name))
	})
	return cols, failures, nil
}

// mariaDBJSON names the JSON columns of a table on MariaDB (none on
// MySQL, whose JSON columns the catalog calls json).
func (m *myBackend) mariaDBJSON(ctx context.Context, table string) (map[string]bool, error) {
	maria, err := m.isMariaDB(ctx)
	if err != nil || !maria {
		return nil, err
	}
	rows, err := m.db.QueryContext(ctx, `SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS
WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME = ?`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	json := map[string]bool{}
	for rows.Next() {
		var clause string
		if err := rows.Scan(&clause); err != nil {
			return nil, err
		}
		if name, ok := strings.CutPrefix(clause, "json_valid(`"); ok && strings.HasSuffix(name, "`)") {
			json[strings.ReplaceAll(strings.TrimSuffix(name, "`)"), "``", "`")] = true
		}
	}
	return json, rows.Err()
}

// plainJSON is json.Marshal without its escaping of <, > and &, which
// PostgreSQL's to_jsonb does not do either: the text of a value stays
// as it was.
func plainJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// payloadJSON renders a job's payload columns as a JSON object, in the
// forms Job.Payload documents.
func payloadJSON(cols []myColumn, values []any) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		key, _ := plainJSON(c.name)
		b.Write(key)
		b.WriteString(": ")
		v, err := valueJSON(c.kind, values[i])
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.name, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// valueJSON renders one column's value, as the driver returned it.
func valueJSON(kind columnKind, v any) ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	text := func() string {
		switch v := v.(type) {
		case []byte:
			return string(v)
		case string:
			return v
		}
		return fmt.Sprint(v)
	}
	switch kind {
	case kindJSON:
		if doc, err := jsonbOrder([]byte(text())); err == nil {
			return doc, nil
		}
	case kindBool:
		switch v := v.(type) {
		case bool: // SQL Server's bit
			return plainJSON(v)
		case int64:
			return plainJSON(v != 0)
		case []byte, string:
			return plainJSON(text() != "0")
		}
	case kindNumber:
		switch v := v.(type) {
		case int64, uint64:
			return plainJSON(v)
		case float32:
			return []byte(pgFloat(float64(v), 32)), nil
		case float64:
			return []byte(pgFloat(v, 64)), nil
		}
		if s := text(); json.Valid([]byte(s)) {
			if _, err := strconv.ParseFloat(s, 64); err == nil {
				return []byte(s), nil // DECIMAL, exact as the server wrote it
			}
		}
	case kindReal:
		if f, ok := v.(float64); ok {
			return []byte(pgFloat(f, 32)), nil
		}
	case kindTime:
		if t, ok := v.(time.Time); ok {
			return plainJSON(t.UTC().Format("2006-01-02T15:04:05.999999-07:00"))
		}
	case kindDate:
		if t, ok := v.(time.Time); ok {
			return plainJSON(t.Format(time.DateOnly))
		}
	case kindBytes:
		if b, ok := v.([]byte); ok {
			return plainJSON(`\x` + hex.EncodeToString(b))
		}
	}
	if t, ok := v.(time.Time); ok {
		return plainJSON(t.UTC().Format(time.RFC3339Nano))
	}
	return plainJSON(text())
}

// pgFloat renders a FLOAT (bits 32) or DOUBLE as PostgreSQL's to_jsonb
// renders a real or double precision, which jsonb holds as a numeric: the
// shortest digits that read back as the same value of the type, in plain
// decimal notation (0.00000015, never 1.5e-07).
func pgFloat(f float64, bits int) string {
	if f == 0 {
		return "0"
	}
	e := strconv.FormatFloat(f, 'e', -1, bits) // -1.5e-07
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	sign := ""
	if m, ok := strings.CutPrefix(mant, "-"); ok {
		sign, mant = "-", m
	}
	ds := strings.TrimRight(strings.Replace(mant, ".", "", 1), "0")
	switch point := exp + 1; { // the decimal point is after point digits of ds
	case point <= 0:
		return sign + "0." + strings.Repeat("0", -point) + ds
	case point >= len(ds):
		return sign + ds + strings.Repeat("0", point-len(ds))
	default:
		return sign + ds[:point] + "." + ds[point:]
	}
}

// jsonbOrder rewrites a JSON document compactly as PostgreSQL's jsonb
// holds it: each object's keys shortest first, then in byte order (as
// MySQL's JSON orders them too), the last of duplicate keys winning, and
// numbers as numerics (1e2 is 100); MariaDB keeps a document as it was
// written.
func jsonbOrder(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("more than one JSON value")
	}
	var b bytes.Buffer
	err := writeJSONB(&b, v)
	return b.Bytes(), err
}

// pgNumeric writes a JSON number as PostgreSQL's numeric does: in plain
// decimal notation, its scale the digits after the point once the
// exponent is applied, and no sign on zero.
func pgNumeric(n string) string {
	sign := ""
	if rest, ok := strings.CutPrefix(n, "-"); ok {
		sign, n = "-", rest
	}
	mant, expText, _ := strings.Cut(strings.ToLower(n), "e")
	exp, err := strconv.Atoi(strings.TrimPrefix(expText, "+"))
	if expText == "" {
		exp, err = 0, nil
	}
	if err != nil {
		return sign + n
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits, point := whole+frac, len(whole)+exp
	scale := max(0, len(frac)-exp)
	switch {
	case point < 0:
		digits, point = strings.Repeat("0", -point)+digits, 0
	case point > len(digits):
		digits += strings.Repeat("0", point-len(digits))
	}
	intPart, fracPart := strings.TrimLeft(digits[:point], "0"), digits[point:]
	if intPart == "" {
		intPart = "0"
	}
	if len(fracPart) < scale {
		fracPart += strings.Repeat("0", scale-len(fracPart))
	}
	fracPart = fracPart[:scale]
	if strings.Trim(intPart+fracPart, "0") == "" {
		sign = ""
	}
	if fracPart == "" {
		return sign + intPart
	}
	return sign + intPart + "." + fracPart
}

func writeJSONB(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) })
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSONB(b, k); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := writeJSONB(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSONB(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case json.Number:
		b.WriteString(pgNumeric(string(v)))
	default:
		doc, err := plainJSON(v)
		if err != nil {
			return err
		}
		b.Write(doc)
	}
	return nil
}
