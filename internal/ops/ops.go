// Package ops holds the operations behind queuegen's stats, jobs, retry,
// cancel, purge, pause and resume commands. Queues are found through the
// registry table; their tables are named from it, always quoted
// (pgx.Identifier), and every value is a bound parameter.
package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queuegen/queuegen/internal/engine/postgres"
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
			return nil, fmt.Errorf("no queue registry in schema %s: apply the migrations first (queuegen migrate up)", schema)
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

// Stats are one queue's counts. The states partition the jobs: ready,
// scheduled and retrying are the available jobs (due now; not yet due
// and never failed; not yet due after failing), running are the jobs a
// worker holds (leased, or in transaction mode locked by the claiming
// transaction), then succeeded and dead.
type Stats struct {
	// Queue is the queue; BaseTable, instead, names the INHERITS parent
	// whose counts cover every queue that inherits it.
	Queue     string  `json:"queue,omitempty"`
	BaseTable string  `json:"base_table,omitempty"`
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
	s := Stats{BaseTable: base}
	return s, statsOf(ctx, db, pgx.Identifier{schema, base}.Sanitize(), &s)
}

// statsOf counts in one statement, so every count and age describes one
// snapshot.
func statsOf(ctx context.Context, db DB, from string, s *Stats) error {
	return db.QueryRow(ctx, `WITH jobs AS (
    SELECT state, run_after, attempted_at, cardinality(errors) > 0 AS failed,
           state = 'available' AND `+postgres.Held+` AS held
    FROM `+from+`
)
SELECT
    count(*) FILTER (WHERE state = 'available' AND NOT held AND run_after <= now()),
    count(*) FILTER (WHERE state = 'available' AND NOT held AND run_after > now() AND NOT failed),
    count(*) FILTER (WHERE state = 'available' AND NOT held AND run_after > now() AND failed),
    count(*) FILTER (WHERE state = 'running' OR held),
    count(*) FILTER (WHERE state = 'succeeded'),
    count(*) FILTER (WHERE state = 'dead'),
    coalesce(extract(epoch FROM now() - min(run_after) FILTER (WHERE state = 'available' AND NOT held AND run_after <= now())), 0)::float8,
    (count(*) FILTER (WHERE attempted_at > now() - interval '1 minute'))::float8 / 60
FROM jobs`).Scan(&s.Ready, &s.Scheduled, &s.Retrying, &s.Running, &s.Succeeded, &s.Dead, &s.OldestAge, &s.ClaimsPerSecond)
}

func table(schema string, q Queue) string { return pgx.Identifier{schema, q.Table}.Sanitize() }

// Job is one job as the jobs command shows it.
type Job struct {
	ID          int64      `json:"id"`
	State       string     `json:"state"`
	Attempt     int32      `json:"attempt"`
	MaxAttempts int32      `json:"max_attempts"`
	Priority    int16      `json:"priority"`
	RunAfter    time.Time  `json:"run_after"`
	CreatedAt   time.Time  `json:"created_at"`
	AttemptedAt *time.Time `json:"attempted_at,omitempty"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	LockedBy    *string    `json:"locked_by,omitempty"`
	LockedUntil *time.Time `json:"locked_until,omitempty"`
	UniqueKey   *string    `json:"unique_key,omitempty"`
	// Errors are the failed attempts' errors, oldest first.
	Errors []string `json:"errors"`
	// Payload holds the job's payload columns by name (a JSON payload is
	// its column's document).
	Payload json.RawMessage `json:"payload"`
}

// bookkeeping are the columns every queue table has; the others are the
// payload.
var bookkeeping = []string{"id", "state", "attempt", "max_attempts", "priority", "run_after", "created_at",
	"attempted_at", "finished_at", "locked_by", "locked_until", "errors", "unique_key"}

// Filter selects jobs: one id, or every job in a state. States are
// available (due now), scheduled (not yet due, never failed), retrying
// (not yet due, after failures), running, succeeded and dead, as Stats
// counts them; "failed" means available after failures, and dead.
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
		"all":       "true",
		"available": "state = 'available' AND run_after <= now()",
		"scheduled": "state = 'available' AND run_after > now() AND cardinality(errors) = 0",
		"retrying":  "state = 'available' AND run_after > now() AND cardinality(errors) > 0",
		"failed":    "(state = 'dead' OR (state = 'available' AND cardinality(errors) > 0))",
		"running":   "state = 'running'",
		"succeeded": "state = 'succeeded'",
		"dead":      "state = 'dead'",
	}[f.State]
	if !ok {
		return "", nil, fmt.Errorf("unknown state %q: want all, available, scheduled, retrying, failed, running, succeeded or dead", f.State)
	}
	return pred, nil, nil
}

// Jobs lists up to limit jobs of q matching f, newest first; with before
// > 0, only jobs with a smaller id (the next page: keyset paging, which
// stays fast however deep it goes).
func Jobs(ctx context.Context, db DB, schema string, q Queue, f Filter, before int64, limit int) ([]Job, error) {
	where, args, err := f.where()
	if err != nil {
		return nil, err
	}
	if before > 0 {
		args = append(args, before)
		where += fmt.Sprintf(" AND id < $%d", len(args))
	}
	args = append(args, bookkeeping, limit)
	rows, err := db.Query(ctx, fmt.Sprintf(`SELECT id, state, attempt, max_attempts, priority, run_after, created_at, attempted_at,
    finished_at, locked_by, locked_until, unique_key, errors, to_jsonb(job) - $%d::text[]
FROM %s AS job WHERE %s ORDER BY id DESC LIMIT $%d`, len(args)-1, table(schema, q), where, len(args)), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Job, error) {
		var j Job
		err := r.Scan(&j.ID, &j.State, &j.Attempt, &j.MaxAttempts, &j.Priority, &j.RunAfter, &j.CreatedAt, &j.AttemptedAt,
			&j.FinishedAt, &j.LockedBy, &j.LockedUntil, &j.UniqueKey, &j.Errors, &j.Payload)
		return j, err
	})
}

// GetJob reads one job of q; a NoJobError when there is none.
func GetJob(ctx context.Context, db DB, schema string, q Queue, id int64) (Job, error) {
	jobs, err := Jobs(ctx, db, schema, q, Filter{ID: id}, 0, 1)
	if err != nil {
		return Job{}, err
	}
	if len(jobs) == 0 {
		return Job{}, &NoJobError{fmt.Sprintf("queue %s has no job %d", q.Name, id)}
	}
	return jobs[0], nil
}

// Count counts the jobs of q matching f that action applies to.
func Count(ctx context.Context, db DB, schema string, q Queue, f Filter, action Action) (int64, error) {
	where, args, err := f.where()
	if err != nil {
		return 0, err
	}
	args = append(args, states[action])
	var n int64
	err = db.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s AND state = ANY($%d::text[])", table(schema, q), where, len(args)), args...).Scan(&n)
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

// states are the states an action applies to.
var states = map[Action][]string{
	Retry:  {"available", "dead", "succeeded"},
	Cancel: {"available", "running"},
	Purge:  {"available", "running", "succeeded", "dead"},
}

// Result is what an action did.
type Result struct {
	// Changed are the ids of the jobs the action changed, ascending.
	Changed []int64 `json:"changed"`
	// Locked are jobs it matched but skipped: a transaction in progress
	// holds them (a transaction-mode worker working them, say). Run the
	// action again once it has ended.
	Locked []int64 `json:"locked,omitempty"`
	// Conflicts are jobs retry could not make available: an unfinished
	// job holds their unique key.
	Conflicts []Conflict `json:"conflicts,omitempty"`
}

// Conflict is a job whose unique key another unfinished job holds.
type Conflict struct {
	ID     int64  `json:"id"`
	Key    string `json:"unique_key"`
	Holder int64  `json:"held_by"`
}

// Skipped is how many matched jobs were not changed.
func (r *Result) Skipped() int { return len(r.Locked) + len(r.Conflicts) }

// NoJobError is returned for an id no job of the queue has, or a job the
// action does not apply to.
type NoJobError struct{ Msg string }

func (e *NoJobError) Error() string { return e.Msg }

// lockTimeout bounds how long an action waits for a lock it cannot skip
// (the registry row, the table's lock): operations never hang silently.
const lockTimeout = "5s"

// BatchSize is how many jobs one transaction of an action changes: a large
// retry, cancel or purge runs as many short transactions, never one long
// one that would hold back vacuum or lock many rows at once.
const BatchSize = 10000

// Apply does action to the jobs of q matching f, in batches of BatchSize,
// calling progress (when not nil) after each batch. It never waits on a
// job a transaction holds: such jobs are skipped and reported. Retry skips
// jobs whose unique key another unfinished job holds (and, of several
// retried jobs sharing a key, retries the newest), naming the holder.
func Apply(ctx context.Context, db TxBeginner, schema string, q Queue, f Filter, action Action, progress func(done, total int)) (*Result, error) {
	where, args, err := f.where()
	if err != nil {
		return nil, err
	}
	applicable, ok := states[action]
	if !ok {
		return nil, fmt.Errorf("unknown action %q", action)
	}
	t := table(schema, q)
	args = append(args, applicable)
	rows, err := db.Query(ctx, fmt.Sprintf("SELECT id FROM %s WHERE %s AND state = ANY($%d::text[]) ORDER BY id", t, where, len(args)), args...)
	if err != nil {
		return nil, err
	}
	all, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	if f.ID != 0 && len(all) == 0 {
		return nil, noJob(ctx, db, t, q, f.ID, action)
	}
	res := &Result{Changed: []int64{}}
	done := 0
	for batch := range slices.Chunk(all, BatchSize) {
		if err := applyBatch(ctx, db, t, batch, action, res); err != nil {
			return res, err
		}
		done += len(batch)
		if progress != nil {
			progress(done, len(all))
		}
	}
	slices.Sort(res.Changed)
	slices.Sort(res.Locked)
	slices.SortFunc(res.Conflicts, func(a, b Conflict) int { return cmp.Compare(a.ID, b.ID) })
	return res, nil
}

// applyBatch does action to the jobs of ids that still qualify, in one
// short transaction.
func applyBatch(ctx context.Context, db TxBeginner, t string, ids []int64, action Action, res *Result) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// The rows are never waited for (SKIP LOCKED); this bounds waiting for
	// anything else, such as a lock on the whole table.
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+lockTimeout+"'"); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, "SELECT id, unique_key FROM "+t+" WHERE id = ANY($1::bigint[]) AND state = ANY($2::text[]) ORDER BY id FOR UPDATE SKIP LOCKED", ids, states[action])
	if err != nil {
		return err
	}
	type candidate struct {
		id  int64
		key *string
	}
	cands, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (candidate, error) {
		var c candidate
		return c, r.Scan(&c.id, &c.key)
	})
	if err != nil {
		return err
	}
	lockable := map[int64]bool{}
	for _, c := range cands {
		lockable[c.id] = true
	}
	var missing []int64
	for _, id := range ids {
		if !lockable[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		// Those that still qualify are held by a transaction; the others
		// changed meanwhile (a worker finished them) and are left alone.
		locked, err := collectIDs(ctx, tx, "SELECT id FROM "+t+" WHERE id = ANY($1::bigint[]) AND state = ANY($2::text[])", missing, states[action])
		if err != nil {
			return err
		}
		res.Locked = append(res.Locked, locked...)
	}
	chosen := make([]int64, 0, len(cands))
	if action == Retry {
		// A retried job becomes unfinished again, so it must not take a
		// unique key another unfinished job holds, nor one another job of
		// this retry takes: keep the newest of each key.
		byKey := map[string][]int64{}
		var keys []string
		for _, c := range cands {
			if c.key == nil {
				chosen = append(chosen, c.id)
				continue
			}
			if byKey[*c.key] == nil {
				keys = append(keys, *c.key)
			}
			byKey[*c.key] = append(byKey[*c.key], c.id)
		}
		holders := map[string]int64{}
		if len(keys) > 0 {
			rows, err := tx.Query(ctx, `SELECT DISTINCT ON (unique_key) unique_key, id FROM `+t+`
WHERE unique_key = ANY($1::text[]) AND state IN ('available', 'running') AND id <> ALL($2::bigint[])
ORDER BY unique_key, id DESC`, keys, ids)
			if err != nil {
				return err
			}
			for rows.Next() {
				var k string
				var id int64
				if err := rows.Scan(&k, &id); err != nil {
					rows.Close()
					return err
				}
				holders[k] = id
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		for _, k := range keys {
			group := byKey[k] // ascending
			holder, held := holders[k]
			if !held {
				holder = group[len(group)-1]
				chosen = append(chosen, holder)
				group = group[:len(group)-1]
			}
			for _, id := range group {
				res.Conflicts = append(res.Conflicts, Conflict{ID: id, Key: k, Holder: holder})
			}
		}
	} else {
		for _, c := range cands {
			chosen = append(chosen, c.id)
		}
	}
	var sql string
	switch action {
	case Retry:
		sql = `UPDATE %s SET state = 'available', run_after = now(), finished_at = NULL,
    locked_by = NULL, locked_until = NULL, max_attempts = greatest(max_attempts, attempt + 1)
WHERE id = ANY($1::bigint[]) RETURNING id`
	case Cancel:
		sql = `UPDATE %s SET state = 'dead', finished_at = now(), locked_by = NULL, locked_until = NULL,
    errors = array_append(errors, 'cancelled by an operator')
WHERE id = ANY($1::bigint[]) RETURNING id`
	case Purge:
		sql = `DELETE FROM %s WHERE id = ANY($1::bigint[]) RETURNING id`
	}
	changed, err := collectIDs(ctx, tx, fmt.Sprintf(sql, t), chosen)
	if err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	res.Changed = append(res.Changed, changed...)
	return nil
}

// noJob explains why the job with id matched nothing.
func noJob(ctx context.Context, tx DB, table string, q Queue, id int64, action Action) error {
	var state string
	err := tx.QueryRow(ctx, "SELECT state FROM "+table+" WHERE id = $1", id).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return &NoJobError{fmt.Sprintf("queue %s has no job %d", q.Name, id)}
	}
	if err != nil {
		return err
	}
	return &NoJobError{fmt.Sprintf("job %d of queue %s is %s; %s applies to %s jobs", id, q.Name, state, action, strings.Join(states[action], ", "))}
}

func collectIDs(ctx context.Context, tx pgx.Tx, sql string, args ...any) ([]int64, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// TxBeginner is a DB that also begins transactions: a pool or connection.
type TxBeginner interface {
	DB
	Begin(ctx context.Context) (pgx.Tx, error)
}

// SetPaused pauses or resumes q.
func SetPaused(ctx context.Context, db DB, schema string, q Queue, paused bool) error {
	_, err := db.Exec(ctx, "UPDATE "+pgx.Identifier{schema, "queuegen_queues"}.Sanitize()+" SET paused = $1 WHERE name = $2", paused, q.Name)
	return err
}
