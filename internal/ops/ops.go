// Package ops holds the operations behind queuegen's stats, jobs, retry,
// cancel, purge, pause and resume commands. Queues are found through the
// registry table; their tables are named from it, always quoted
// (pgx.Identifier), and every value is a bound parameter.
package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what ops needs: a pool or a connection.
type DB interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Queue is a registered queue.
type Queue struct {
	Name, Table, Mode string
	Paused            bool
}

// Queues lists the registered queues of schema, by name.
func Queues(ctx context.Context, db DB, schema string) ([]Queue, error) {
	rows, err := db.Query(ctx, "SELECT name, table_name, mode, paused FROM "+pgx.Identifier{schema, "queuegen_queues"}.Sanitize()+" ORDER BY name")
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
			return nil, fmt.Errorf("no queue registry in schema %s: run queuegen migrate up first", schema)
		}
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Queue, error) {
		var q Queue
		err := r.Scan(&q.Name, &q.Table, &q.Mode, &q.Paused)
		return q, err
	})
}

// Find returns the registered queue named name.
func Find(ctx context.Context, db DB, schema, name string) (Queue, error) {
	qs, err := Queues(ctx, db, schema)
	if err != nil {
		return Queue{}, err
	}
	var names []string
	for _, q := range qs {
		if q.Name == name {
			return q, nil
		}
		names = append(names, q.Name)
	}
	return Queue{}, fmt.Errorf("no queue %q (registered: %v)", name, names)
}

// Stats are one queue's counts.
type Stats struct {
	Queue     string  `json:"queue"`
	Paused    bool    `json:"paused"`
	Ready     int64   `json:"ready"`
	Scheduled int64   `json:"scheduled"`
	Retrying  int64   `json:"retrying"`
	Running   int64   `json:"running"`
	Succeeded int64   `json:"succeeded"`
	Dead      int64   `json:"dead"`
	OldestAge float64 `json:"oldest_ready_age_seconds"`
	// ClaimsPerSecond counts the claims of the last minute among the jobs
	// still in the table (completed jobs of on_success: delete queues are
	// gone, so there it counts running and retried claims only).
	ClaimsPerSecond float64 `json:"claims_per_second"`
}

// QueueStats reads the counts of every queue of schema.
func QueueStats(ctx context.Context, db DB, schema string) ([]Stats, error) {
	qs, err := Queues(ctx, db, schema)
	if err != nil {
		return nil, err
	}
	out := make([]Stats, 0, len(qs))
	for _, q := range qs {
		s := Stats{Queue: q.Name, Paused: q.Paused}
		if err := statsOf(ctx, db, table(schema, q), &s); err != nil {
			return nil, fmt.Errorf("queue %s: %w", q.Name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// BaseStats reads the counts of every queue inheriting base, in one
// statement: a query on an INHERITS parent reads its children too.
func BaseStats(ctx context.Context, db DB, schema, base string) (Stats, error) {
	s := Stats{Queue: "* (" + base + ")"}
	return s, statsOf(ctx, db, pgx.Identifier{schema, base}.Sanitize(), &s)
}

func statsOf(ctx context.Context, db DB, from string, s *Stats) error {
	return db.QueryRow(ctx, `SELECT
    count(*) FILTER (WHERE state = 'available' AND run_after <= now() AND cardinality(errors) = 0),
    count(*) FILTER (WHERE state = 'available' AND run_after > now() AND cardinality(errors) = 0),
    count(*) FILTER (WHERE state = 'available' AND cardinality(errors) > 0),
    count(*) FILTER (WHERE state = 'running'),
    count(*) FILTER (WHERE state = 'succeeded'),
    count(*) FILTER (WHERE state = 'dead'),
    coalesce(extract(epoch FROM now() - min(run_after) FILTER (WHERE state = 'available' AND run_after <= now())), 0)::float8,
    (count(*) FILTER (WHERE attempted_at > now() - interval '1 minute'))::float8 / 60
FROM `+from).Scan(&s.Ready, &s.Scheduled, &s.Retrying, &s.Running, &s.Succeeded, &s.Dead, &s.OldestAge, &s.ClaimsPerSecond)
}

func table(schema string, q Queue) string { return pgx.Identifier{schema, q.Table}.Sanitize() }

// Job is one job as the jobs command lists it.
type Job struct {
	ID          int64     `json:"id"`
	State       string    `json:"state"`
	Attempt     int32     `json:"attempt"`
	MaxAttempts int32     `json:"max_attempts"`
	RunAfter    time.Time `json:"run_after"`
	LockedBy    *string   `json:"locked_by,omitempty"`
	LastError   *string   `json:"last_error,omitempty"`
}

// Filter selects jobs: one id, or every job in a state. States are
// available, scheduled (available, not yet due), retrying (available,
// after failures), running, succeeded and dead; "failed" means retrying
// and dead.
type Filter struct {
	ID    int64
	State string
}

// where renders the filter as a predicate with its parameters.
func (f Filter) where() (string, []any, error) {
	if f.ID != 0 {
		return "id = $1", []any{f.ID}, nil
	}
	pred, ok := map[string]string{
		"available": "state = 'available' AND run_after <= now()",
		"scheduled": "state = 'available' AND run_after > now()",
		"retrying":  "state = 'available' AND cardinality(errors) > 0",
		"failed":    "(state = 'dead' OR (state = 'available' AND cardinality(errors) > 0))",
		"running":   "state = 'running'",
		"succeeded": "state = 'succeeded'",
		"dead":      "state = 'dead'",
	}[f.State]
	if !ok {
		return "", nil, fmt.Errorf("unknown state %q: want available, scheduled, retrying, failed, running, succeeded or dead", f.State)
	}
	return pred, nil, nil
}

// Jobs lists up to limit jobs of q matching f, newest failure first.
func Jobs(ctx context.Context, db DB, schema string, q Queue, f Filter, limit int) ([]Job, error) {
	where, args, err := f.where()
	if err != nil {
		return nil, err
	}
	args = append(args, limit)
	rows, err := db.Query(ctx, fmt.Sprintf(`SELECT id, state, attempt, max_attempts, run_after, locked_by, errors[cardinality(errors)]
FROM %s WHERE %s ORDER BY id DESC LIMIT $%d`, table(schema, q), where, len(args)), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Job, error) {
		var j Job
		err := r.Scan(&j.ID, &j.State, &j.Attempt, &j.MaxAttempts, &j.RunAfter, &j.LockedBy, &j.LastError)
		return j, err
	})
}

// Count counts the jobs of q matching f.
func Count(ctx context.Context, db DB, schema string, q Queue, f Filter) (int64, error) {
	where, args, err := f.where()
	if err != nil {
		return 0, err
	}
	var n int64
	err = db.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", table(schema, q), where), args...).Scan(&n)
	return n, err
}

// Action is what retry, cancel and purge do to the jobs they select.
type Action string

// The actions.
const (
	// Retry makes jobs available now, with at least one attempt left.
	Retry Action = "retry"
	// Cancel makes unfinished jobs dead, with the error "cancelled by an
	// operator". A running job's worker finds its attempt no longer held.
	Cancel Action = "cancel"
	// Purge deletes jobs.
	Purge Action = "purge"
)

// Apply does action to the jobs of q matching f and returns their ids.
func Apply(ctx context.Context, db DB, schema string, q Queue, f Filter, action Action) ([]int64, error) {
	where, args, err := f.where()
	if err != nil {
		return nil, err
	}
	var sql string
	switch action {
	case Retry:
		sql = `UPDATE %s SET state = 'available', run_after = now(), finished_at = NULL,
    locked_by = NULL, locked_until = NULL, max_attempts = greatest(max_attempts, attempt + 1)
WHERE %s AND state IN ('available', 'dead', 'succeeded') RETURNING id`
	case Cancel:
		sql = `UPDATE %s SET state = 'dead', finished_at = now(), locked_by = NULL, locked_until = NULL,
    errors = array_append(errors, 'cancelled by an operator')
WHERE %s AND state IN ('available', 'running') RETURNING id`
	case Purge:
		sql = `DELETE FROM %s WHERE %s RETURNING id`
	default:
		return nil, fmt.Errorf("unknown action %q", action)
	}
	rows, err := db.Query(ctx, fmt.Sprintf(sql, table(schema, q), where), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// SetPaused pauses or resumes q.
func SetPaused(ctx context.Context, db DB, schema string, q Queue, paused bool) error {
	_, err := db.Exec(ctx, "UPDATE "+pgx.Identifier{schema, "queuegen_queues"}.Sanitize()+" SET paused = $1 WHERE name = $2", paused, q.Name)
	return err
}
