package spec

import (
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	s, err := Parse("q.yaml", []byte(`version: 1
package: {name: jobs, dir: ./internal//jobs}
migrations: db/migrations
queries: db/queries
queues:
  - name: email
    payload: {columns: {recipient: text, n: "Numeric(10, 2)[]"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	q := s.Queues[0]
	if s.Schema != "public" || s.Base.Table != "base_queue" || s.Package.Dir != "internal/jobs" {
		t.Errorf("spec defaults: %+v", s)
	}
	if q.Table != "email_queue" || !q.Inherits || q.Mode != ModeLease || q.Lock != LockSkipLocked ||
		q.Lease != DefaultLease || q.MaxAttempts != DefaultMaxAttempts || q.OnSuccess != OnSuccessDelete ||
		q.Backoff != (Backoff{Min: time.Second, Max: time.Hour, Factor: 2, Jitter: 0.1}) {
		t.Errorf("queue defaults: %+v", q)
	}
	if got := q.Payload.Columns[1].Type.SQL(); got != "numeric(10, 2)[]" {
		t.Errorf("type = %q", got)
	}
}

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{"email": "Email", "user_id": "UserID", "id": "ID", "a_b_c": "ABC", "_x": "X", "x2_y": "X2Y", "ids": "Ids"} {
		if got := GoName(in); got != want {
			t.Errorf("GoName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDurations(t *testing.T) {
	for in, want := range map[string]time.Duration{"30s": 30 * time.Second, "1h30m": 90 * time.Minute, "7d": 7 * 24 * time.Hour, "0d": 0} {
		if got, err := parseDuration(in); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"7 days", "d", "-1d", "1w"} {
		if _, err := parseDuration(in); err == nil {
			t.Errorf("parseDuration(%q) succeeded", in)
		}
	}
}

func TestDefaultValuesAreKeptAsWritten(t *testing.T) {
	s, err := Parse("q.yaml", []byte(`version: 1
package: {name: jobs, dir: jobs}
migrations: m
queries: q
queues:
  - name: email
    payload:
      columns:
        note: {type: text, default: "it's"}
        tries: {type: integer, default: 3}
        plain: text
`))
	if err != nil {
		t.Fatal(err)
	}
	cols := s.Queues[0].Payload.Columns
	if *cols[0].Default != "it's" || *cols[1].Default != "3" || cols[2].Default != nil {
		t.Errorf("defaults = %v, %v, %v", cols[0].Default, cols[1].Default, cols[2].Default)
	}
}
