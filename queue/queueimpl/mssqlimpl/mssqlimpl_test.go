package mssqlimpl

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/queuegen/queuegen/queue"
)

// These cover the Go side of the SQL Server code (what the statements are
// sent and how their results are read); no SQL Server runs here, so they
// are no evidence that the statements work.

func TestOpenJSONValue(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 30, 0, 123456789, time.FixedZone("x", 3600))
	doc := json.RawMessage(`{"a":1}`)
	cases := []struct {
		in   any
		want any
	}{
		{at, "2026-11-24T09:30:00.123456"},
		{&at, "2026-11-24T09:30:00.123456"},
		{(*time.Time)(nil), nil},
		{[]byte{0xca, 0xfe}, "0xcafe"},
		{[]byte(nil), nil},
		{doc, `{"a":1}`},
		{&doc, `{"a":1}`},
		{"text", "text"},
		{int64(7), int64(7)},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, OpenJSONValue(c.in)); diff != "" {
			t.Errorf("%#v: %s", c.in, diff)
		}
	}
}

func TestOpenJSONBatch(t *testing.T) {
	jobs := []*queue.Job[int]{{ID: 1, Attempt: 2}, {ID: 3, Attempt: 1}}
	fences, err := OpenJSONFences(jobs)
	if err != nil || fences != `[{"id":1,"attempt":2},{"id":3,"attempt":1}]` {
		t.Errorf("fences %s, %v", fences, err)
	}
	batch, err := OpenJSONBatch(jobs, []error{errors.New("a"), errors.New("b")}, []time.Duration{time.Second, 2 * time.Millisecond}, nil)
	if err != nil || batch != `[{"id":1,"attempt":2,"message":"a","delay_us":1000000},{"id":3,"attempt":1,"message":"b","delay_us":2000}]` {
		t.Errorf("batch %s, %v", batch, err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	batch, _ = OpenJSONBatch(jobs[:1], []error{errors.New("a")}, nil, []time.Time{at})
	if batch != `[{"id":1,"attempt":2,"message":"a","retry_at":"2026-01-02T03:04:05.000006"}]` {
		t.Errorf("batch at %s", batch)
	}
}

func TestScanJSON(t *testing.T) {
	var doc json.RawMessage
	if err := ScanJSON(&doc).Scan(`{"x":1}`); err != nil || string(doc) != `{"x":1}` {
		t.Errorf("%s, %v", doc, err)
	}
	if err := ScanJSON(&doc).Scan(nil); err == nil {
		t.Error("NULL read into a NOT NULL document")
	}
	var null *json.RawMessage
	if err := ScanNullJSON(&null).Scan(nil); err != nil || null != nil {
		t.Errorf("%v, %v", null, err)
	}
	if err := ScanNullJSON(&null).Scan([]byte(`[1]`)); err != nil || string(*null) != `[1]` {
		t.Errorf("%v, %v", null, err)
	}
}

func TestDateTime2(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 500, time.FixedZone("x", -7200))
	if got := DateTime2(at); got.In(time.UTC) != at.UTC() {
		t.Errorf("%v is not %v in UTC", got, at)
	}
	if NullDateTime2(nil).Valid {
		t.Error("nil time is not NULL")
	}
}

func TestOpenJSONDate(t *testing.T) {
	day := time.Date(2026, 11, 24, 0, 30, 0, 0, time.FixedZone("x", 5*3600))
	if got := OpenJSONDate(day); got != "2026-11-24" {
		t.Errorf("%v: %v (the date it shows, not UTC's)", day, got)
	}
	if got := OpenJSONDate((*time.Time)(nil)); got != nil {
		t.Errorf("nil: %v", got)
	}
	if got := Date(day); got.String() != "2026-11-24" || !NullDate(&day).Valid || NullDate(nil).Valid {
		t.Errorf("Date: %v", got)
	}
}
