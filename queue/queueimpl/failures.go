package queueimpl

import (
	"encoding/json"
	"time"

	"github.com/queuegen/queuegen/queue"
)

// Failures pairs a job's errors errs with failures, the failures column
// (a JSON array of {at, attempt, error}, error being the index in errs
// of the error each describes; NULL, empty or "null" when none has been
// recorded): one queue.Failure per error, in order, with the time and
// attempt of those the column describes (zero for the others, recorded
// before it existed) and the stack split off the text of a panic's. An
// object naming no error of errs, or a column that is not such an array
// (edited by hand), adds nothing.
func Failures(errs []string, failures []byte) []queue.Failure {
	out := make([]queue.Failure, len(errs))
	for i, e := range errs {
		out[i].Error, out[i].Stack = queue.SplitStack(e)
	}
	if len(failures) == 0 { // before recorded, which escapes: a first attempt allocates nothing here
		return out
	}
	var recorded []struct {
		At      string `json:"at"`
		Attempt int32  `json:"attempt"`
		Error   *int   `json:"error"`
	}
	if json.Unmarshal(failures, &recorded) != nil {
		return out
	}
	for _, r := range recorded {
		if r.Error == nil || *r.Error < 0 || *r.Error >= len(out) {
			continue
		}
		f := &out[*r.Error]
		f.At, f.Attempt = FailureTime(r.At), r.Attempt
	}
	return out
}

// FailureTime reads the time of a failure as each engine writes it:
// RFC 3339 (PostgreSQL's jsonb, with the session's offset; MySQL's and
// SQL Server's, in UTC with Z), or without a zone, taken as UTC. Text
// that is none of these is the zero time (unknown).
func FailureTime(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// JSONBytes is a nullable JSON column read as text (SQL Server's
// NVARCHAR(MAX)) as bytes; nil for NULL.
func JSONBytes(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

// NullJSONBytes is a nullable JSON column read as *json.RawMessage
// (MySQL's) as bytes; nil for NULL.
func NullJSONBytes(doc *json.RawMessage) []byte {
	if doc == nil {
		return nil
	}
	return *doc
}
