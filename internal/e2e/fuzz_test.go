package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/queuegen/queuegen/internal/e2e/jobs"
)

// FuzzPayloadRoundTrip pushes payloads of fuzzed values through every
// kind of column (text, varchar, integers, double with NaN and infinities,
// bytea, arrays, jsonb) and reads them back: what PostgreSQL can store
// comes back unchanged; what it cannot (NUL bytes and invalid UTF-8 in
// text) is refused with an error, never a panic or a silent change.
// Values are always bound parameters, so SQL-looking strings are data.
func FuzzPayloadRoundTrip(f *testing.F) {
	f.Add("hello", int64(1), 1.5, []byte{0, 1, 255}, "a,b,c")
	f.Add("'; DROP TABLE typed_queue; --", int64(math.MinInt64), math.NaN(), []byte{}, "")
	f.Add("üñïçødé \U0001F600", int64(math.MaxInt64), math.Inf(1), []byte("x"), ",,")
	f.Add("nul\x00byte", int64(0), math.Inf(-1), []byte(nil), "\xff")
	f.Add(strings.Repeat("long ", 20000), int64(-1), -0.0, bytes.Repeat([]byte{7}, 100000), "$1,@x")
	q := jobs.NewTypedQueue(migrated(f))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, s string, n int64, d float64, b []byte, list string) {
		doc, _ := json.Marshal(map[string]string{"s": s})
		p := jobs.TypedPayload{
			CText: s, CVarchar: truncate(s, 10), CSmallint: int16(n), CInteger: int32(n), CBigint: n,
			CDouble: d, CReal: float32(d), CBytea: b, CTextArray: strings.Split(list, ","), CIntArray: []int32{int32(n)},
			CJsonb: doc, CTimestamptz: time.Unix(0, 0).UTC(), CDate: time.Unix(0, 0).UTC(),
			NText: &s, NDouble: &d, NBytea: b,
		}
		p.CNumeric.Scan("0")
		p.CUuid.Scan("00000000-0000-0000-0000-000000000000")
		storable := func(v string) bool { return utf8.ValidString(v) && !strings.ContainsRune(v, 0) }
		ok := storable(s) && storable(list)
		res, err := q.Push(ctx, p)
		if !ok {
			if err == nil {
				t.Fatalf("PostgreSQL cannot store %q, yet the push succeeded", s+list)
			}
			return
		}
		if err != nil {
			t.Fatalf("push of storable values failed: %v", err)
		}
		got, err := q.Get(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		g := got.Payload
		same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
		if g.CText != s || *g.NText != s || g.CBigint != n || g.CInteger != int32(n) || g.CSmallint != int16(n) ||
			!same(g.CDouble, d) || !same(*g.NDouble, d) || !same(float64(g.CReal), float64(float32(d))) ||
			!bytes.Equal(g.CBytea, b) || strings.Join(g.CTextArray, ",") != list || g.CVarchar != p.CVarchar {
			t.Fatalf("round trip changed the payload:\nsent %+v\ngot  %+v", p, g)
		}
		var back map[string]string
		if err := json.Unmarshal(g.CJsonb, &back); err != nil || back["s"] != s {
			t.Fatalf("jsonb round trip: %q, %v", g.CJsonb, err)
		}
	})
}

// truncate cuts s to at most n characters, on a rune boundary.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		r = r[:n]
	}
	return string(r)
}
