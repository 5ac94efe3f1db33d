package spec

import (
	"strings"
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

// TestHostileNames: every name that reaches SQL is a plain identifier;
// each hostile one is refused with a message that says why.
func TestHostileNames(t *testing.T) {
	for name, want := range map[string]string{
		`email"; DROP TABLE users; --`: "is not a plain lower-case identifier",
		`a"b`:                          "is not a plain lower-case identifier",
		"a;b":                          "is not a plain lower-case identifier",
		"a b":                          "is not a plain lower-case identifier",
		"Email":                        "is not a plain lower-case identifier",
		"eMail":                        "is not a plain lower-case identifier",
		"1abc":                         "is not a plain lower-case identifier",
		"émail":                        "is not a plain lower-case identifier",
		"a-b":                          "is not a plain lower-case identifier",
		"a.b":                          "is not a plain lower-case identifier",
		"_":                            "with at least one letter",
		"select":                       "is an SQL keyword",
		"user":                         "is an SQL keyword",
		"order":                        "is an SQL keyword",
		strings.Repeat("a", 64):        "is 64 bytes long; PostgreSQL names are at most 63",
		strings.Repeat("é", 40):        "is 80 bytes long",
		"pg_queue":                     "starts with pg_",
		"":                             "cannot be empty",
	} {
		if msg := checkIdent(name); !strings.Contains(msg, want) {
			t.Errorf("checkIdent(%q) = %q, want it to say %q", name, msg, want)
		}
	}
	for _, name := range []string{"email", "_private", "a1", strings.Repeat("a", 63), "name", "data"} {
		if msg := checkIdent(name); msg != "" {
			t.Errorf("checkIdent(%q) = %s", name, msg)
		}
	}
}
