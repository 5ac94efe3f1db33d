package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/queuegen/queuegen/internal/pgtest"
)

// TestRenderedAsPostgreSQLDoes: the MySQL side renders FLOAT, DOUBLE and
// JSON payload values as PostgreSQL's to_jsonb renders real, double
// precision and jsonb, asked of a real server.
func TestRenderedAsPostgreSQLDoes(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	ctx := context.Background()
	for _, f := range []float64{0, 1, -1, 0.25, 0.1, 1.5e-7, -2.5e-5, 1e-4, 123456.789, 1234567, 1e15, 1e20, 1.7976931348623157e308,
		5e-324, 2.0 / 3, math.Pi, 9007199254740993, 0.30000000000000004, -0.0} {
		var want string
		if err := pool.QueryRow(ctx, "SELECT to_jsonb($1::float8)::text", f).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if got := pgFloat(f, 64); got != want {
			t.Errorf("double %v renders %s, PostgreSQL %s", f, got, want)
		}
		f32 := float32(f)
		if math.IsInf(float64(f32), 0) || (f32 == 0 && f != 0) {
			continue
		}
		if err := pool.QueryRow(ctx, "SELECT to_jsonb($1::float4)::text", f32).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if got := pgFloat(float64(f32), 32); got != want {
			t.Errorf("real %v renders %s, PostgreSQL %s", f32, got, want)
		}
	}
	for _, doc := range []string{`{"b": [1, 2.5, null], "a": {"x": "y"}}`, `{"bb": 1, "a": 2, "ab": {"zz": true, "y": false}}`,
		`[{"k": "<&>"}, "é\u00e9\n\t", 1e2, -0, -0.0, 1.50, 1.5e-7, 2.50E+1, 1.234e1, 0.001e3, 12e-1, 100e-2, -7]`, `{"a": 1, "a": 2}`, `"text"`, `12`, `{}`, `[]`} {
		var want string
		if err := pool.QueryRow(ctx, "SELECT $1::jsonb::text", doc).Scan(&want); err != nil {
			t.Fatal(err)
		}
		got, err := jsonbOrder([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		var compact bytes.Buffer
		json.Compact(&compact, []byte(want))
		if string(got) != compact.String() {
			t.Errorf("JSON %s renders %s, PostgreSQL %s", doc, got, compact.String())
		}
	}
}
