package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Job is one job as the jobs command shows it.
type Job struct {
	ID int64 `json:"id"`
	// State is the job's state as Stats counts it and a Filter selects it
	// (see Phase): available, scheduled, retrying, running, expired,
	// succeeded or dead; RowState is the state column as stored
	// (available, running, succeeded or dead).
	State       string     `json:"state"`
	RowState    string     `json:"row_state"`
	Attempt     int32      `json:"attempt"`
	MaxAttempts int32      `json:"max_attempts"`
	Priority    int16      `json:"priority"`
	RunAfter    time.Time  `json:"run_after"`
	CreatedAt   time.Time  `json:"created_at"`
	AttemptedAt *time.Time `json:"attempted_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	LockedBy    *string    `json:"locked_by"`
	LockedUntil *time.Time `json:"locked_until"`
	UniqueKey   *string    `json:"unique_key"`
	// Held is true for a job that a transaction in progress holds: in
	// transaction mode, the job a worker is working, whose claim no other
	// session sees until the worker's transaction commits. State is then
	// running, and the other fields are as last committed (the worker's
	// attempt and its time show once it commits). PostgreSQL sees every
	// held job (the row's xmax); MySQL and MariaDB see row locks only by
	// trying to take them, so there Held is found, for the due jobs of a
	// transaction-mode queue, by a locking read that passes over held rows
	// (FOR UPDATE SKIP LOCKED, rolled back at once). SQL Server shows
	// them to no plain read either: there a held job is a due job, claimed
	// before (attempt > 0), that a read without locks (NOLOCK) sees and a
	// read passing over locked rows (READPAST) does not, and its fields
	// are read without locks: as its worker's transaction has them, not
	// yet committed.
	Held bool `json:"held"`
	// Uncommitted is true for a held job whose fields were read without
	// locks (SQL Server's NOLOCK): as its holder's transaction has them,
	// not yet committed, rather than as last committed.
	Uncommitted bool `json:"uncommitted,omitempty"`
	// Errors are the failed attempts' errors, oldest first.
	Errors []string `json:"errors"`
	// Failures are Errors with when and at which attempt each was
	// recorded (unknown for errors recorded before the table had its
	// failures column), and the stack split off a panic's: one per error,
	// in the same order.
	Failures []Failure `json:"failures"`
	// Payload holds the job's payload columns by name (a JSON payload is
	// its column's document), as PostgreSQL's to_jsonb renders them: keys
	// shortest first, then in byte order (in nested documents too). On
	// MySQL they are rendered alike: booleans (TINYINT(1)) as true and
	// false, FLOAT and DOUBLE in their shortest digits in plain decimal
	// notation, times in RFC 3339 with their +00:00 offset, dates
	// as 2006-01-02, binary columns as "\\x" and their hex digits.
	Payload json.RawMessage `json:"payload"`
}

// bookkeeping are the columns every queue table has; the others are the
// payload.
var bookkeeping = []string{"id", "state", "attempt", "max_attempts", "priority", "run_after", "created_at",
	"attempted_at", "finished_at", "locked_by", "locked_until", "errors", "failures", "unique_key"}

// Filter selects jobs: one id, or every job in a state, narrowed by the
// optional fields below. States are available (due now), scheduled (not
// yet due, never failed), retrying (not yet due, after failures),
// running (leased, lease not yet expired), expired (running, its lease
// expired: its worker is gone or late, and the next claim takes it back),
// succeeded and dead, as Stats counts them (a job a transaction holds is
// running: see Job.Held); "failed" means available after failures, and
// dead. These predicates are the one definition of the states: Stats,
// Glance's estimates and Job.Phase partition the jobs as they do.
type Filter struct {
	ID    int64
	State string
	// Since and Until, where set, keep the jobs created at or after Since
	// and before Until.
	Since, Until time.Time
	// Column, where set, keeps the jobs whose payload column of that name
	// equals Value, compared as text as the database renders the column
	// (a JSON payload column as its document). Column must be one of the
	// queue's payload columns (Conn.Columns).
	Column, Value string
	// ErrorText, where set, keeps the jobs one of whose recorded errors
	// contains it (case-sensitive).
	ErrorText string
}

// predicates are the filter's states (the one definition of them: see
// Filter), each as a predicate on a queue
// table in either engine's SQL, in which {held} stands for the backend's
// predicate of a job a transaction in progress holds (see Job.Held): such a
// job is running, whatever its row says, as Stats counts it.
var predicates = map[string]struct{ pg, my string }{
	"all": {"true", "TRUE"},
	"available": {"state = 'available' AND run_after <= now() AND NOT {held}",
		"state = 'available' AND run_after <= UTC_TIMESTAMP(6) AND NOT {held}"},
	"scheduled": {"state = 'available' AND run_after > now() AND cardinality(errors) = 0 AND NOT {held}",
		"state = 'available' AND run_after > UTC_TIMESTAMP(6) AND JSON_LENGTH(errors) = 0 AND NOT {held}"},
	"retrying": {"state = 'available' AND run_after > now() AND cardinality(errors) > 0 AND NOT {held}",
		"state = 'available' AND run_after > UTC_TIMESTAMP(6) AND JSON_LENGTH(errors) > 0 AND NOT {held}"},
	"failed": {"(state = 'dead' OR (state = 'available' AND cardinality(errors) > 0 AND NOT {held}))",
		"(state = 'dead' OR (state = 'available' AND JSON_LENGTH(errors) > 0 AND NOT {held}))"},
	"running": {"((state = 'running' AND (locked_until IS NULL OR locked_until >= now())) OR {held})",
		"((state = 'running' AND (locked_until IS NULL OR locked_until >= UTC_TIMESTAMP(6))) OR {held})"},
	"expired":   {"(state = 'running' AND locked_until < now())", "(state = 'running' AND locked_until < UTC_TIMESTAMP(6))"},
	"succeeded": {"state = 'succeeded'", "state = 'succeeded'"},
	"dead":      {"state = 'dead'", "state = 'dead'"},
}

// FilterStates are the states a Filter takes, in the order the commands
// list them.
var FilterStates = []string{"all", "available", "scheduled", "retrying", "failed", "running", "expired", "succeeded", "dead"}

// CheckState refuses a state a Filter does not know, naming those it
// does.
func CheckState(state string) error {
	if _, ok := predicates[state]; !ok {
		return fmt.Errorf("unknown state %q: want %s", state, strings.Join(FilterStates, ", "))
	}
	return nil
}

// withHeld is pred with held, the backend's predicate of a held job, in
// place of {held}.
func withHeld(pred, held string) string { return strings.ReplaceAll(pred, "{held}", held) }

// check refuses a state the filter does not know, and a column that is
// not one of q's payload columns.
func (c *Conn) check(ctx context.Context, q Queue, f Filter) error {
	if f.ID == 0 {
		if err := CheckState(f.State); err != nil {
			return err
		}
	}
	if f.Column == "" {
		return nil
	}
	cols, err := c.Columns(ctx, q)
	if err != nil {
		return err
	}
	if !slices.Contains(cols, f.Column) {
		return fmt.Errorf("queue %s has no payload column %q (it has %s)", q.Name, f.Column, strings.Join(cols, ", "))
	}
	return nil
}

// Columns lists q's payload columns, by name.
func (c *Conn) Columns(ctx context.Context, q Queue) ([]string, error) {
	cols, err := c.PayloadOrder(ctx, q)
	slices.Sort(cols)
	return cols, err
}

// PayloadOrder lists q's payload columns in their table's order, which is
// the spec's order of the queue's fields (the generated migrations create
// them so): the identifying fields first, as the spec's author put them.
func (c *Conn) PayloadOrder(ctx context.Context, q Queue) ([]string, error) {
	cols, err := c.b.columns(ctx, q)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(cols, func(name string) bool { return slices.Contains(bookkeeping, name) || name == "unique_active" }), nil
}

// Estimate is the query planner's estimate of q's jobs in state (one of
// FilterStates), from the table's statistics: it costs a plan, not a
// count, however large the table.
func (c *Conn) Estimate(ctx context.Context, q Queue, state string) (int64, error) {
	if err := CheckState(state); err != nil {
		return 0, err
	}
	return c.b.estimate(ctx, q, state)
}

// narrowing is the part of a filter past its id or state, as predicates
// in one engine's SQL, each with its one parameter: the caller numbers
// the parameters (ph gives the nth's placeholder, from 1) and quotes the
// column, which check has found among the table's.
func (f Filter) narrowing(ph func(n int) string, first int, quote func(string) string, my bool) (string, []any) {
	var where []string
	var args []any
	add := func(pred string, arg any) {
		where = append(where, fmt.Sprintf(pred, ph(first+len(args))))
		args = append(args, arg)
	}
	if !f.Since.IsZero() {
		add("created_at >= %s", f.Since.UTC())
	}
	if !f.Until.IsZero() {
		add("created_at < %s", f.Until.UTC())
	}
	switch {
	case f.Column != "" && my:
		add("CAST("+quote(f.Column)+" AS CHAR) = %s", f.Value)
	case f.Column != "":
		add(quote(f.Column)+"::text = %s", f.Value)
	}
	switch {
	case f.ErrorText != "" && my:
		add("JSON_SEARCH(errors, 'one', %s, '|') IS NOT NULL", "%"+likeEscape(f.ErrorText, '|')+"%")
	case f.ErrorText != "":
		add("strpos(array_to_string(errors, E'\\n'), %s) > 0", f.ErrorText)
	}
	if len(where) == 0 {
		return "", nil
	}
	return " AND " + strings.Join(where, " AND "), args
}

// likeEscape escapes LIKE's wildcards in s with esc.
func likeEscape(s string, esc rune) string {
	var b strings.Builder
	for _, r := range s {
		if r == '%' || r == '_' || r == esc {
			b.WriteRune(esc)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Jobs lists up to limit jobs of q matching f, newest first; with before
// > 0, only jobs with a smaller id (the next page: keyset paging, which
// stays fast however deep it goes).
func (c *Conn) Jobs(ctx context.Context, q Queue, f Filter, before int64, limit int) ([]Job, error) {
	if err := c.check(ctx, q, f); err != nil {
		return nil, err
	}
	// The database's clock, read before the jobs: the states are those
	// the filter's predicates gave them, as near as one clock allows.
	now, err := c.b.now(ctx)
	if err != nil {
		return nil, err
	}
	jobs, err := c.b.jobs(ctx, q, f, before, limit)
	for i := range jobs {
		if jobs[i].Errors == nil {
			jobs[i].Errors = []string{}
		}
		if jobs[i].Failures == nil {
			jobs[i].Failures = failuresOf(jobs[i].Errors, nil)
		}
		jobs[i].RowState = jobs[i].State
		if jobs[i].Held {
			jobs[i].RowState = "available"
		}
		jobs[i].State = jobs[i].Phase(now)
	}
	return jobs, err
}

// GetJob reads one job of q; a NoJobError when there is none.
func (c *Conn) GetJob(ctx context.Context, q Queue, id int64) (Job, error) {
	jobs, err := c.Jobs(ctx, q, Filter{ID: id}, 0, 1)
	if err != nil {
		return Job{}, err
	}
	if len(jobs) == 0 {
		return Job{}, &NoJobError{fmt.Sprintf("queue %s has no job %d", q.Name, id)}
	}
	return jobs[0], nil
}

// Phase is the state, of those a Filter takes and Stats counts, that j is
// in at now (the database's clock, or near it): available, scheduled,
// retrying, running, expired, succeeded or dead, as the filter's
// predicates define them. A job whose State is already one of these keeps
// it, but for a running job whose lease expires by now.
func (j Job) Phase(now time.Time) string {
	switch {
	case j.State == "running" && !j.Held && j.LockedUntil != nil && j.LockedUntil.Before(now):
		return "expired"
	case j.State != "available":
		return j.State
	case !j.RunAfter.After(now):
		return "available"
	case len(j.Errors) > 0:
		return "retrying"
	}
	return "scheduled"
}

// NoJobError is returned for an id no job of the queue has, or a job the
// action does not apply to.
type NoJobError struct{ Msg string }

// Error is the message, which names the queue and the job.
func (e *NoJobError) Error() string { return e.Msg }
