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

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
)

// FuzzPayloadRoundTrip pushes payloads of fuzzed values through every
// column type (text, varchar, integers, real and double with NaN and
// infinities, numeric with NaN and infinities, uuid, timestamptz, date,
// bytea, arrays, jsonb, and NULL in the nullable ones) and reads them back: what PostgreSQL can store
// comes back unchanged; what it cannot (NUL bytes and invalid UTF-8 in
// text, and in JSON payloads) is refused with an error, never a panic or
// a silent change.
// Values are always bound parameters, so SQL-looking strings are data.
func FuzzPayloadRoundTrip(f *testing.F) {
	f.Add("hello", int64(1), 1.5, []byte{0, 1, 255}, "a,b,c", "12.345", false)
	f.Add("'; DROP TABLE typed_queue; --", int64(math.MinInt64), math.NaN(), []byte{}, "", "NaN", true)
	f.Add("üñïçødé \U0001F600", int64(math.MaxInt64), math.Inf(1), []byte("x"), ",,", "Infinity", false)
	f.Add("nul\x00byte", int64(0), math.Inf(-1), []byte(nil), "\xff", "-Infinity", true)
	f.Add(strings.Repeat("long ", 20000), int64(-1), -0.0, bytes.Repeat([]byte{7}, 100000), "$1,@x", "-0.000000001", false)
	pool := migrated(f)
	q := jobs.NewTypedQueue(pool)
	reports := jobs.NewReportQueue(pool)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, s string, n int64, d float64, b []byte, list string, num string, nulls bool) {
		doc, _ := json.Marshal(map[string]string{"s": s})
		p := jobs.TypedPayload{
			CText: s, CVarchar: truncate(s, 10), CSmallint: int16(n), CInteger: int32(n), CBigint: n,
			CDouble: d, CReal: float32(d), CBytea: b, CTextArray: strings.Split(list, ","), CIntArray: []int32{int32(n)},
			CJsonb: doc, CTimestamptz: time.Unix(0, 0).UTC(), CDate: time.Unix(0, 0).UTC(),
			NText: &s, NDouble: &d, NBytea: b,
		}
		// numeric (NaN and ±Infinity included) from its text; uuid from the
		// bytes; timestamps from the integer, within PostgreSQL's range.
		if p.CNumeric.Scan(num) != nil {
			p.CNumeric.Scan("0")
		}
		var id [16]byte
		copy(id[:], b)
		p.CUUID = pgtype.UUID{Bytes: id, Valid: true}
		at := time.UnixMicro(n % (200 * 365 * 24 * 3600 * 1e6)).UTC()
		day := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
		p.CTimestamptz, p.CDate = at, day
		if nulls {
			p.NText, p.NDouble, p.NBytea, p.NTextArray = nil, nil, nil, nil
		} else {
			p.NTimestamptz, p.NDate, p.NUUID, p.NTextArray = &at, &day, p.CUUID, p.CTextArray
		}
		storable := func(v string) bool { return utf8.ValidString(v) && !strings.ContainsRune(v, 0) }
		// A JSON payload: invalid UTF-8 is refused (encoding/json would
		// store U+FFFD); PostgreSQL refuses NUL (\u0000) in jsonb.
		jp := jobs.ReportPayload{ReportID: n, Format: &s, RequestedAt: time.Unix(0, 0).UTC()}
		if jres, err := reports.Push(ctx, jp); !storable(s) {
			if err == nil {
				t.Fatalf("a JSON payload holding %q was pushed", s)
			}
		} else if err != nil {
			t.Fatalf("push of a storable JSON payload failed: %v", err)
		} else if got, err := reports.Get(ctx, jres.ID); err != nil || got.Payload.ReportID != n || *got.Payload.Format != s {
			t.Fatalf("JSON payload round trip: %+v, %v", got, err)
		}
		// c_numeric is numeric(12, 3): PostgreSQL rounds to three decimals
		// and refuses what does not fit (infinities included); ask it what
		// it stores.
		var wantNum pgtype.Numeric
		numErr := pool.QueryRow(ctx, "SELECT $1::numeric::numeric(12, 3)", p.CNumeric).Scan(&wantNum)
		ok := storable(s) && storable(list) && numErr == nil
		res, err := q.Push(ctx, p)
		if !ok {
			if err == nil {
				t.Fatalf("PostgreSQL cannot store %q / %q, yet the push succeeded", s+list, num)
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
		sentNum, _ := wantNum.Value()
		gotNum, _ := g.CNumeric.Value()
		if sentNum != gotNum || g.CUUID != p.CUUID || !g.CTimestamptz.Equal(at) || !g.CDate.Equal(day) {
			t.Fatalf("numeric, uuid or time changed: sent %v %v %v %v, got %v %v %v %v", sentNum, p.CUUID, at, day, gotNum, g.CUUID, g.CTimestamptz, g.CDate)
		}
		if nulls {
			if g.NText != nil || g.NDouble != nil || g.NBytea != nil || g.NTextArray != nil {
				t.Fatalf("NULLs came back as values: %+v", g)
			}
			return
		}
		if (g.NTimestamptz == nil || !g.NTimestamptz.Equal(at)) || g.NUUID != p.CUUID || strings.Join(g.NTextArray, ",") != list {
			t.Fatalf("nullable values changed: %+v", g)
		}
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
