package sqlserver

import (
	"testing"

	"github.com/queuegen/queuegen/internal/gocode"
	"github.com/queuegen/queuegen/internal/spec"
)

func TestLiteral(t *testing.T) {
	cases := []struct {
		typ, value, want string
	}{
		{"text", "it's -- a \\ test", `N'it''s -- a \ test'`},
		{"text", "a\\\nb\r\n", `N'a\' + NCHAR(10) + N'b' + NCHAR(13) + NCHAR(10)`},
		{"text", "", `N''`},
		{"boolean", "true", "1"},
		{"boolean", "false", "0"},
		{"integer", "42", "42"},
		{"timestamptz", "2026-01-02T15:04:05+02:00", "'2026-01-02T13:04:05.000000'"},
		{"uuid", "00000000-0000-0000-0000-000000000001", "'00000000-0000-0000-0000-000000000001'"},
	}
	for _, c := range cases {
		if got := literal(spec.Type{Name: c.typ}, c.value); got != c.want {
			t.Errorf("%s %q: %s, want %s", c.typ, c.value, got, c.want)
		}
	}
}

func TestWidens(t *testing.T) {
	cases := []struct {
		from, to string
		ok       bool
	}{
		{"NVARCHAR(100)", "NVARCHAR(200)", true},
		{"NVARCHAR(200)", "NVARCHAR(100)", false},
		{"NVARCHAR(100)", "NVARCHAR(MAX)", false},
		{"INT", "BIGINT", false},
	}
	for _, c := range cases {
		if ok, why := (ddl{}).Widens(c.from, c.to); ok != c.ok || !ok && why == "" {
			t.Errorf("%s → %s: %v %q", c.from, c.to, ok, why)
		}
	}
}

func TestArg(t *testing.T) {
	e := Engine{}
	cases := []struct {
		t    gocode.Type
		want string
	}{
		{timeTime, "DateTime2"},
		{timeTime.Ptr(), "NullDateTime2"},
		{jsonRaw, "JSONText"},
		{jsonRaw.Ptr(), "NullJSONText"},
		{gocode.String, ""},
		{gocode.Bytes, ""},
	}
	for _, c := range cases {
		if got := e.Arg(c.t, "").Name; got != c.want {
			t.Errorf("%v: %q, want %q", c.t, got, c.want)
		}
	}
	if e.Arg(timeTime, "DATE").Name != "Date" || e.Arg(timeTime.Ptr(), "DATE").Name != "NullDate" {
		t.Error("dates are not sent as DATE")
	}
	if e.Scan(jsonRaw).Name != "ScanJSON" || e.Scan(jsonRaw.Ptr()).Name != "ScanNullJSON" || e.Scan(gocode.String).Name != "" {
		t.Error("JSON columns are not scanned through mssqlimpl.ScanJSON")
	}
}

func TestReserved(t *testing.T) {
	for _, w := range []string{"order", "Percent", "OPENQUERY"} {
		if !reserved(w) {
			t.Errorf("%s is reserved", w)
		}
	}
	for _, w := range []string{"state", "name", "queue", "payload"} {
		if reserved(w) {
			t.Errorf("%s is not reserved", w)
		}
	}
}
