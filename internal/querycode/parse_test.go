package querycode

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParams(t *testing.T) {
	cases := []struct {
		sql  string
		want []string
	}{
		{"SELECT @a, @b, @a", []string{"a", "b"}},
		{"SELECT '@not' + @x -- @comment\n, @@ROWCOUNT, @y_1", []string{"x", "y_1"}},
		{"SELECT N'it''s @no', @yes", []string{"yes"}},
		{"SELECT 1", nil},
		{"DECLARE @claimed TABLE (id BIGINT);\nUPDATE t SET a = @a\nOUTPUT inserted.* INTO @claimed;\nSELECT * FROM @claimed;", []string{"a"}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, params(c.sql)); diff != "" {
			t.Errorf("%q: %s", c.sql, diff)
		}
	}
}

func TestResultColumns(t *testing.T) {
	cases := []struct {
		sql     string
		want    []string
		wantErr bool
	}{
		{"UPDATE t\nSET a = 1\nOUTPUT inserted.*;", []string{"*"}, false},
		{"INSERT INTO t (a)\nOUTPUT inserted.id, inserted.run_after\nVALUES (1);", []string{"id", "run_after"}, false},
		{"SELECT COUNT_BIG(*) AS depth\nFROM t;", []string{"depth"}, false},
		{"SELECT paused FROM r\nWHERE name = N'x';", []string{"paused"}, false},
		{"SELECT *\nFROM t\nWHERE id = @id;", []string{"*"}, false},
		{"DELETE FROM t WHERE id = @id;", nil, false},
		{"DECLARE @claimed TABLE (id BIGINT);\nUPDATE t\nSET a = 1\nOUTPUT inserted.* INTO @claimed;\nSELECT * FROM @claimed;", []string{"*"}, false},
		{"DECLARE @pushed TABLE (id BIGINT, run_after DATETIME2(6));\nINSERT INTO t (a)\nOUTPUT inserted.id, inserted.run_after INTO @pushed\nVALUES (1);\nSELECT id, run_after FROM @pushed;", []string{"id", "run_after"}, false},
		{"SELECT COUNT_BIG(*) AS busy,\n       COUNT_BIG(CASE WHEN locked_until < COALESCE(@now, SYSUTCDATETIME()) AND attempt < max_attempts THEN 1 END) AS expired\nFROM t;", []string{"busy", "expired"}, false},
		{"SELECT COALESCE(SUM(CAST(jobs AS BIGINT)), 0) AS jobs, N'a,b' AS label\nFROM t;", []string{"jobs", "label"}, false},
		{"SELECT COALESCE(a, b)\nFROM t;", nil, true},
		{"SELECT COUNT(*)\nFROM t;", nil, true},
	}
	for _, c := range cases {
		got, err := resultColumns(c.sql)
		if (err != nil) != c.wantErr {
			t.Errorf("%q: error %v", c.sql, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%q: %s", c.sql, diff)
		}
	}
}

func TestParseFile(t *testing.T) {
	got, err := parseFile("-- header\n\n-- name: GetX :one\n-- GetX reads\n-- one row.\nSELECT *\nFROM t\nWHERE id = @id;\n\n-- name: DelX :execrows\nDELETE FROM t WHERE id = @id AND attempt = @attempt;\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []*query{
		{Name: "GetX", Kind: ":one", Doc: []string{"GetX reads", "one row."}, SQL: "SELECT *\nFROM t\nWHERE id = @id;", Params: []string{"id"}},
		{Name: "DelX", Kind: ":execrows", SQL: "DELETE FROM t WHERE id = @id AND attempt = @attempt;", Params: []string{"id", "attempt"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
	if _, err := parseFile("-- name: Bad\nSELECT 1;"); err == nil {
		t.Error("a name line without a kind was accepted")
	}
}

func TestExpandStarInto(t *testing.T) {
	got := expandStar("DECLARE @claimed TABLE (id BIGINT, state VARCHAR(9));\nUPDATE t\nSET a = 1\nOUTPUT inserted.* INTO @claimed;\nSELECT * FROM @claimed;",
		[]column{{Name: "state"}, {Name: "id"}})
	want := "DECLARE @claimed TABLE (id BIGINT, state VARCHAR(9));\nUPDATE t\nSET a = 1\nOUTPUT inserted.state, inserted.id INTO @claimed (state, id);\nSELECT state, id FROM @claimed;"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}
