package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/engine/postgres"
	"github.com/queuegen/queuegen/internal/spec"
)

// pgQuerier is a pool or a transaction.
type pgQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pgBackend is the operations on PostgreSQL, through a pgx pool, on the
// queues of one schema.
type pgBackend struct {
	pool   *pgxpool.Pool
	schema string
}

func init() {
	backends[postgres.Name] = func(ctx context.Context, db dburl.DB, schema string) (backend, error) {
		// No schema: the one the connection's search_path puts first
		// (current_schema(), public by default), where queuegen migrate
		// made the tables; resolved when the backend first connects.
		b, err := openPostgres(ctx, db, schema)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
}

func openPostgres(ctx context.Context, db dburl.DB, schema string) (*pgBackend, error) {
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		return nil, err
	}
	if cfg.ConnConfig.ConnectTimeout == 0 { // the URL's connect_timeout, else this
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &pgBackend{pool: pool, schema: schema}, nil
}

// bounded runs f in a transaction of its own whose waits for a lock end
// after lockTimeout (SET LOCAL, which holds behind a transaction-mode
// pooler too): an operation that meets a lock a migration, a LOCK TABLE or
// a long transaction holds fails and says so, rather than waiting without
// end (and, for a write such as a pause, taking effect whenever the lock
// is let go).
func (p *pgBackend) bounded(ctx context.Context, f func(tx pgx.Tx) error) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, pgLockTimeout); err != nil {
		return err
	}
	if err := f(tx); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
			return fmt.Errorf("gave up after %v waiting for a lock another session holds (a migration, a LOCK TABLE or a long transaction; pg_locks shows which): %w", lockTimeout, err)
		}
		return err
	}
	return tx.Commit(ctx)
}

// boundedRows runs query under bounded and collects its rows with to.
func boundedRows[T any](ctx context.Context, p *pgBackend, to pgx.RowToFunc[T], query string, args ...any) (out []T, err error) {
	err = p.bounded(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, to)
		return err
	})
	return out, err
}

// pgLockTimeout sets lockTimeout as the transaction's lock_timeout, on
// Citus on the worker nodes too: their row locks are where a statement on
// a distributed or reference table waits (a pause behind a transaction
// that updated the registry waited without end), and Citus sends a SET
// LOCAL to them only with citus.propagate_set_commands = 'local'. Without
// Citus that setting is an unused placeholder.
var pgLockTimeout = fmt.Sprintf("SET LOCAL citus.propagate_set_commands = 'local'; SET LOCAL lock_timeout = '%dms'", lockTimeout.Milliseconds())

// ping connects, and resolves the schema when none was named.
func (p *pgBackend) ping(ctx context.Context) error {
	if p.schema == "" {
		return p.resolveSchema(ctx)
	}
	return p.pool.Ping(ctx)
}

// resolveSchema takes the connection's current schema, the first of its
// search_path that exists (public by default; the URL's search_path when
// it sets one, as a test's schema on a shared Citus cluster does), for the
// schema the queues are in when none was named: queuegen migrate creates
// the tables there too.
func (p *pgBackend) resolveSchema(ctx context.Context) error {
	var schema *string
	if err := p.pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return err
	}
	if schema == nil {
		return errors.New("ops: no schema: the connection's search_path names no schema that exists; name one with --schema or in the spec")
	}
	p.schema = *schema
	return nil
}

func (p *pgBackend) product(context.Context) (string, error) { return "PostgreSQL", nil }

func (p *pgBackend) close() { p.pool.Close() }

func (p *pgBackend) queues(ctx context.Context) ([]Queue, error) {
	if p.schema == "" {
		if err := p.resolveSchema(ctx); err != nil {
			return nil, err
		}
	}
	qs, err := boundedRows(ctx, p, func(r pgx.CollectableRow) (Queue, error) {
		var q Queue
		err := r.Scan(&q.Name, &q.Table, &q.Mode, &q.Paused)
		return q, err
	}, "SELECT name, table_name, mode, paused FROM "+pgx.Identifier{p.schema, "queuegen_queues"}.Sanitize()+" ORDER BY name")
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return nil, fmt.Errorf("no queue registry in schema %s: apply the migrations first (queuegen migrate up)", p.schema)
	}
	return qs, err
}

func (p *pgBackend) stats(ctx context.Context, q Queue, s *Stats) error {
	return p.bounded(ctx, func(tx pgx.Tx) error { return p.statsOf(ctx, tx, p.table(q), s) })
}

func (p *pgBackend) baseStats(ctx context.Context, base string, s *Stats) error {
	return p.bounded(ctx, func(tx pgx.Tx) error { return p.statsOf(ctx, tx, pgx.Identifier{p.schema, base}.Sanitize(), s) })
}

// statsOf counts in one statement, so every count and age describes one
// snapshot. A job a transaction in progress holds counts as running
// (postgres.Held, which reads xmax), but on a Citus distributed table:
// Citus plans no system column of a distributed table in every statement
// (a count cancelled by its budget answered "invalid attnum -4", xmax's),
// and a distributed queue has no transaction mode, whose claims are the
// held jobs that matter.
func (p *pgBackend) statsOf(ctx context.Context, db pgQuerier, from string, s *Stats) error {
	held := postgres.Held
	if d, err := p.distributed(ctx, db, from); err != nil {
		return err
	} else if d {
		held = "false"
	}
	return db.QueryRow(ctx, `WITH jobs AS (
    SELECT state, run_after, attempted_at, locked_until, cardinality(errors) > 0 AS failed,
           state = 'available' AND `+held+` AS held
    FROM `+from+`
)
SELECT
    count(*) FILTER (WHERE state = 'available' AND NOT held AND run_after <= now()),
    count(*) FILTER (WHERE state = 'available' AND NOT held AND run_after > now() AND NOT failed),
    count(*) FILTER (WHERE state = 'available' AND NOT held AND run_after > now() AND failed),
    count(*) FILTER (WHERE (state = 'running' AND (locked_until IS NULL OR locked_until >= now())) OR held),
    count(*) FILTER (WHERE state = 'running' AND locked_until < now()),
    count(*) FILTER (WHERE state = 'succeeded'),
    count(*) FILTER (WHERE state = 'dead'),
    coalesce(extract(epoch FROM now() - min(run_after) FILTER (WHERE state = 'available' AND NOT held AND run_after <= now())), 0)::float8,
    (count(*) FILTER (WHERE attempted_at > now() - interval '1 minute'))::float8 / 60
FROM jobs`).Scan(&s.Ready, &s.Scheduled, &s.Retrying, &s.Running, &s.Expired, &s.Succeeded, &s.Dead, &s.OldestAge, &s.ClaimsPerSecond)
}

func (p *pgBackend) table(q Queue) string { return pgx.Identifier{p.schema, q.Table}.Sanitize() }

// distributed reports whether q's table is a Citus distributed table
// (distribute: {buckets: N}): distributed by its bucket column, which a
// job's id carries (id % spec.MaxBuckets). Citus refuses FOR UPDATE in a
// statement on several shards, so a batch then locks and changes its jobs
// one bucket at a time; and the bucket is not payload.
func (p *pgBackend) distributed(ctx context.Context, q pgQuerier, table string) (bool, error) {
	var citus bool
	if err := q.QueryRow(ctx, "SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL").Scan(&citus); err != nil || !citus {
		return false, err
	}
	var d bool
	err := q.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1::regclass AND partmethod = 'h')", table).Scan(&d)
	return d, err
}

// pgHeld is true for a job a transaction in progress holds, which is
// running whatever its row says (see Job.Held): in a transaction-mode
// queue, a due job a worker holds. A lease-mode queue's jobs are held by
// a transaction only within a statement (a claim's, a completion's), and
// the jobs command shows them as last committed, as on MySQL: finding
// them would cost the running filter a read of every available job.
func pgHeld(q Queue) string {
	if q.Mode != "transaction" {
		return "false"
	}
	return "(state = 'available' AND " + postgres.Held + ")"
}

// pgWhere renders a checked filter of q's jobs as a predicate with its
// parameters.
func pgWhere(q Queue, f Filter) (string, []any) {
	where, args := withHeld(predicates[f.State].pg, pgHeld(q)), []any(nil)
	if f.ID != 0 {
		where, args = "id = $1", []any{f.ID}
	}
	more, margs := f.narrowing(func(n int) string { return fmt.Sprintf("$%d", n) }, len(args)+1,
		func(col string) string { return pgx.Identifier{col}.Sanitize() }, false)
	return where + more, append(args, margs...)
}

func (p *pgBackend) columns(ctx context.Context, q Queue) ([]string, error) {
	rows, err := p.pool.Query(ctx, "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position", p.schema, q.Table)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// jobs reads failures as a key of the row's jsonb: NULL where the table
// has no failures column yet (its migration not applied), as where the
// column is NULL.
func (p *pgBackend) jobs(ctx context.Context, q Queue, f Filter, before int64, limit int) ([]Job, error) {
	where, args := pgWhere(q, f)
	if before > 0 {
		args = append(args, before)
		where += fmt.Sprintf(" AND id < $%d", len(args))
	}
	hide := bookkeeping
	if d, err := p.distributed(ctx, p.pool, p.table(q)); err != nil {
		return nil, err
	} else if d {
		hide = append(slices.Clip(bookkeeping), spec.BucketColumn)
	}
	args = append(args, hide, limit)
	return boundedRows(ctx, p, func(r pgx.CollectableRow) (Job, error) {
		var j Job
		var fails []byte
		err := r.Scan(&j.ID, &j.State, &j.Attempt, &j.MaxAttempts, &j.Priority, &j.RunAfter, &j.CreatedAt, &j.AttemptedAt,
			&j.FinishedAt, &j.LockedBy, &j.LockedUntil, &j.UniqueKey, &j.Errors, &fails, &j.Payload, &j.Held)
		j.Failures = failuresOf(j.Errors, fails)
		if j.Held {
			j.State = "running"
		}
		return j, err
	}, fmt.Sprintf(`SELECT id, state, attempt, max_attempts, priority, run_after, created_at, attempted_at,
    finished_at, locked_by, locked_until, unique_key, errors, to_jsonb(job) -> 'failures', to_jsonb(job) - $%d::text[], %s
FROM %s AS job WHERE %s ORDER BY id DESC LIMIT $%d`, len(args)-1, pgHeld(q), p.table(q), where, len(args)), args...)
}

func (p *pgBackend) count(ctx context.Context, q Queue, f Filter, action Action) (int64, error) {
	where, args := pgWhere(q, f)
	var n int64
	err := p.bounded(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s AND %s", p.table(q), where, applicable[action].pg), args...).Scan(&n)
	})
	return n, err
}

func (p *pgBackend) matching(ctx context.Context, q Queue, f Filter, action Action) ([]int64, error) {
	where, args := pgWhere(q, f)
	return boundedRows(ctx, p, pgx.RowTo[int64], fmt.Sprintf("SELECT id FROM %s WHERE %s AND %s ORDER BY id", p.table(q), where, applicable[action].pg), args...)
}

func (p *pgBackend) now(ctx context.Context) (t time.Time, err error) {
	return t, p.pool.QueryRow(ctx, "SELECT now()").Scan(&t)
}

func (p *pgBackend) begin(ctx context.Context, q Queue) (batch, error) {
	cols, err := p.columns(ctx, q)
	if err != nil {
		return nil, err
	}
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	// The rows are never waited for (SKIP LOCKED); this bounds waiting for
	// anything else, such as a lock on the whole table.
	if _, err := tx.Exec(ctx, pgLockTimeout); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	dist, err := p.distributed(ctx, tx, p.table(q))
	if err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return &pgBatch{tx: tx, table: p.table(q), failures: slices.Contains(cols, "failures"), distributed: dist}, nil
}

// retryable: a deadlock (40P01) or serialization failure (40001) rolled
// the transaction back.
func (p *pgBackend) retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

func (p *pgBackend) setPaused(ctx context.Context, q Queue, paused bool) error {
	return p.bounded(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE "+pgx.Identifier{p.schema, "queuegen_queues"}.Sanitize()+" SET paused = $1 WHERE name = $2", paused, q.Name)
		return err
	})
}

// pgBatch is a batch of Apply on PostgreSQL.
type pgBatch struct {
	tx    pgx.Tx
	table string
	// failures: the table has its failures column (its migration is
	// applied), where a cancel records its time and attempt.
	failures bool
	// distributed: the table is a Citus distributed table by bucket; its
	// locks and changes go one bucket at a time (see pgBackend.distributed).
	distributed bool
}

// byBucket calls f with the ids of each bucket, and the bucket, in the
// order of the ids' buckets: once with every id and bucket -1 when the
// table is not distributed.
func (b *pgBatch) byBucket(ids []int64, f func(bucket int, ids []int64) error) error {
	if !b.distributed {
		return f(-1, ids)
	}
	groups := map[int][]int64{}
	var order []int
	for _, id := range ids {
		k := int(id % spec.MaxBuckets)
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], id)
	}
	slices.Sort(order)
	for _, k := range order {
		if err := f(k, groups[k]); err != nil {
			return err
		}
	}
	return nil
}

// inBucket is the predicate of a statement on the jobs ids of one bucket
// ($2), or of ids alone, and its arguments.
func inBucket(bucket int, ids []int64) (string, []any) {
	if bucket < 0 {
		return "id = ANY($1::bigint[])", []any{ids}
	}
	return "bucket = $2 AND id = ANY($1::bigint[])", []any{ids, int16(bucket)}
}

func (b *pgBatch) lock(ctx context.Context, ids []int64, action Action) ([]candidate, error) {
	var out []candidate
	err := b.byBucket(ids, func(bucket int, ids []int64) error {
		where, args := inBucket(bucket, ids)
		rows, err := b.tx.Query(ctx, "SELECT id, unique_key FROM "+b.table+" WHERE "+where+" AND "+applicable[action].pg+" ORDER BY id FOR UPDATE SKIP LOCKED", args...)
		if err != nil {
			return err
		}
		cands, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (candidate, error) {
			var c candidate
			return c, r.Scan(&c.id, &c.key)
		})
		out = append(out, cands...)
		return err
	})
	return out, err
}

func (b *pgBatch) matching(ctx context.Context, ids []int64, action Action) ([]int64, error) {
	return b.collectIDs(ctx, "SELECT id FROM "+b.table+" WHERE id = ANY($1::bigint[]) AND "+applicable[action].pg, ids)
}

func (b *pgBatch) holders(ctx context.Context, keys []string, ids []int64) (map[string]int64, error) {
	rows, err := b.tx.Query(ctx, `SELECT DISTINCT ON (unique_key) unique_key, id FROM `+b.table+`
WHERE unique_key = ANY($1::text[]) AND state IN ('available', 'running') AND id <> ALL($2::bigint[])
ORDER BY unique_key, id DESC`, keys, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanHolders(rows)
}

func (b *pgBatch) change(ctx context.Context, action Action, ids []int64) ([]int64, error) {
	if b.distributed {
		var out []int64
		err := b.byBucket(ids, func(bucket int, ids []int64) error {
			changed, err := b.changeBucket(ctx, action, bucket, ids)
			out = append(out, changed...)
			return err
		})
		return out, err
	}
	var sql string
	switch action {
	case Retry:
		sql = `UPDATE %s SET state = 'available', run_after = now(), finished_at = NULL,
    locked_by = NULL, locked_until = NULL, max_attempts = greatest(max_attempts, attempt + 1)
WHERE id = ANY($1::bigint[]) RETURNING id`
	case Cancel:
		// The cancel's error goes with its time and attempt, in the same
		// row update, as the runtime's failures do (see the queries'
		// failure part): the object names its error by its index.
		failures := ""
		if b.failures {
			failures = `,
    failures = coalesce(failures, '[]'::jsonb) || jsonb_build_array(jsonb_build_object('at', now(), 'attempt', attempt, 'error', cardinality(errors)))`
		}
		sql = `UPDATE %s SET state = 'dead', finished_at = now(), locked_by = NULL, locked_until = NULL,
    errors = array_append(errors, 'cancelled by an operator')` + failures + `
WHERE id = ANY($1::bigint[]) RETURNING id`
	case Purge:
		sql = `DELETE FROM %s WHERE id = ANY($1::bigint[]) RETURNING id`
	default:
		return nil, fmt.Errorf("unknown action %q", action)
	}
	return b.collectIDs(ctx, fmt.Sprintf(sql, b.table), ids)
}

// changeBucket is change on the jobs ids of one bucket of a distributed
// table: one statement on its shard. Citus takes no STABLE function of a
// column in a distributed UPDATE's SET, so a cancel's failure object is
// computed in a CTE that locks the rows (they are locked already, by lock).
func (b *pgBatch) changeBucket(ctx context.Context, action Action, bucket int, ids []int64) ([]int64, error) {
	var sql string
	switch action {
	case Retry:
		sql = `UPDATE %s SET state = 'available', run_after = now(), finished_at = NULL,
    locked_by = NULL, locked_until = NULL, max_attempts = greatest(max_attempts, attempt + 1)
WHERE bucket = $2 AND id = ANY($1::bigint[]) RETURNING id`
	case Cancel:
		if !b.failures { // the failures column's migration not applied yet
			sql = `UPDATE %s SET state = 'dead', finished_at = now(), locked_by = NULL, locked_until = NULL,
    errors = array_append(errors, 'cancelled by an operator')
WHERE bucket = $2 AND id = ANY($1::bigint[]) RETURNING id`
			break
		}
		sql = `WITH src AS (
    SELECT id, jsonb_build_array(jsonb_build_object('at', now(), 'attempt', attempt, 'error', cardinality(errors))) AS failure
    FROM %[1]s
    WHERE bucket = $2 AND id = ANY($1::bigint[])
    FOR UPDATE
)
UPDATE %[1]s AS job SET state = 'dead', finished_at = now(), locked_by = NULL, locked_until = NULL,
    errors = array_append(job.errors, 'cancelled by an operator'),
    failures = coalesce(job.failures, '[]'::jsonb) || src.failure
FROM src
WHERE job.bucket = $2 AND job.id = src.id RETURNING job.id`
	case Purge:
		sql = `DELETE FROM %s WHERE bucket = $2 AND id = ANY($1::bigint[]) RETURNING id`
	default:
		return nil, fmt.Errorf("unknown action %q", action)
	}
	return b.collectIDs(ctx, fmt.Sprintf(sql, b.table), ids, int16(bucket))
}

func (b *pgBatch) commit(ctx context.Context) error { return b.tx.Commit(ctx) }

func (b *pgBatch) rollback(ctx context.Context) { b.tx.Rollback(ctx) }

func (b *pgBatch) collectIDs(ctx context.Context, sql string, args ...any) ([]int64, error) {
	rows, err := b.tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}
