package ops

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Minute is a count of jobs in one minute.
type Minute struct {
	At time.Time `json:"at"`
	N  int64     `json:"n"`
}

// Finished counts the jobs of q that finished (succeeded or died) since
// since and are still in its table, by the minute they finished, oldest
// first, reading the index on finished_at; ok is false when that took
// longer than budget. A queue with on_success: delete keeps no row of a
// job that succeeded: there only dead jobs are counted (see Counters).
func (c *Conn) Finished(ctx context.Context, q Queue, since time.Time, budget time.Duration) (minutes []Minute, ok bool, err error) {
	return c.b.finished(ctx, q, since, budget)
}

// Counters are the server's running counts of rows written to a table
// since its statistics were last reset: on PostgreSQL those of
// pg_stat_user_tables (n_tup_ins and n_tup_del), which the server updates
// within about a second of each commit (a Citus distributed table's summed
// over its shards, on the worker nodes). Two readings apart in time give
// the jobs pushed and deleted between them (deleted: completed in an
// on_success: delete queue, purged, or removed by retention).
type Counters struct {
	Inserted, Deleted int64
}

// ErrNoCounters is Counters's error on MySQL and MariaDB, which keep no
// per-table row counts unless asked to (MariaDB's userstat, MySQL's
// performance_schema table I/O instruments, neither on by default), and
// on SQL Server, whose per-index operational counts start again whenever
// the index's metadata leaves the cache.
var ErrNoCounters = errors.New("the server keeps no running per-table counts of rows written")

// Counters reads the counters of every queue table, by table name.
func (c *Conn) Counters(ctx context.Context) (map[string]Counters, error) {
	return c.b.counters(ctx)
}

// Tick is a periodic job's last tick: the last time a node pushed it.
type Tick struct {
	Queue, Name string
	Last        time.Time
}

// Periodic reads the last tick of every periodic job that has ticked, by
// queue and name; a periodic job whose scheduler has not yet run has
// none.
func (c *Conn) Periodic(ctx context.Context) ([]Tick, error) { return c.b.periodic(ctx) }

func (p *pgBackend) finished(ctx context.Context, q Queue, since time.Time, budget time.Duration) ([]Minute, bool, error) {
	var out []Minute
	timedOut, err := p.pgWithin(ctx, budget, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT date_trunc('minute', finished_at), count(*) FROM `+p.table(q)+`
WHERE state IN ('succeeded', 'dead') AND finished_at >= $1 GROUP BY 1 ORDER BY 1`, since)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Minute, error) {
			var m Minute
			return m, r.Scan(&m.At, &m.N)
		})
		return err
	})
	return out, !timedOut && err == nil, err
}

func (p *pgBackend) counters(ctx context.Context) (map[string]Counters, error) {
	rows, err := p.pool.Query(ctx, `SELECT relname, n_tup_ins, n_tup_del FROM pg_stat_user_tables WHERE schemaname = $1`, p.schema)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]Counters{}
	for rows.Next() {
		var name string
		var c Counters
		if err := rows.Scan(&name, &c.Inserted, &c.Deleted); err != nil {
			return nil, err
		}
		out[name] = c
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, p.shardCounters(ctx, out)
}

// shardCounters puts in out the counters of the schema's Citus distributed
// tables, summed over their shards: the coordinator's own row of such a
// table counts nothing (its rows are written on the worker nodes). It
// asks every shard (run_command_on_shards: one statement a shard, about
// half a second for two queues of 32 shards here), and leaves out a shard
// that does not answer. Without Citus it does nothing.
func (p *pgBackend) shardCounters(ctx context.Context, out map[string]Counters) error {
	var citus bool
	if err := p.pool.QueryRow(ctx, "SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL").Scan(&citus); err != nil || !citus {
		return err
	}
	rows, err := p.pool.Query(ctx, `SELECT c.relname, coalesce(sum(split_part(r.result, ',', 1)::bigint), 0), coalesce(sum(split_part(r.result, ',', 2)::bigint), 0)
FROM pg_catalog.pg_dist_partition d
JOIN pg_class c ON c.oid = d.logicalrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN LATERAL run_command_on_shards(d.logicalrelid, $$SELECT n_tup_ins || ',' || n_tup_del FROM pg_stat_user_tables WHERE relid = '%s'::regclass$$) r
WHERE n.nspname = $1 AND d.partmethod = 'h' AND r.success
GROUP BY c.relname`, p.schema)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var c Counters
		if err := rows.Scan(&name, &c.Inserted, &c.Deleted); err != nil {
			return err
		}
		out[name] = c
	}
	return rows.Err()
}

func (p *pgBackend) periodic(ctx context.Context) ([]Tick, error) {
	rows, err := p.pool.Query(ctx, "SELECT queue, name, last_tick FROM "+pgx.Identifier{p.schema, "queuegen_periodic"}.Sanitize()+" ORDER BY queue, name")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Tick, error) {
		var t Tick
		return t, r.Scan(&t.Queue, &t.Name, &t.Last)
	})
}

func (m *myBackend) finished(ctx context.Context, q Queue, since time.Time, budget time.Duration) ([]Minute, bool, error) {
	t, err := m.from(ctx, q, "")
	if err != nil {
		return nil, false, err
	}
	var out []Minute
	timedOut, err := m.myWithin(ctx, budget, func(conn *sql.Conn) error {
		rows, err := conn.QueryContext(ctx, `SELECT DATE_FORMAT(finished_at, '%Y-%m-%d %H:%i:00'), COUNT(*) FROM `+t+`
WHERE finished_at >= ? AND state IN ('succeeded', 'dead') GROUP BY 1 ORDER BY 1`, since.UTC())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var at string
			var mi Minute
			if err := rows.Scan(&at, &mi.N); err != nil {
				return err
			}
			if mi.At, err = time.Parse(time.DateTime, at); err != nil {
				return fmt.Errorf("a minute %q: %w", at, err)
			}
			out = append(out, mi)
		}
		return rows.Err()
	})
	return out, !timedOut && err == nil, err
}

func (m *myBackend) counters(context.Context) (map[string]Counters, error) { return nil, ErrNoCounters }

func (m *myBackend) periodic(ctx context.Context) ([]Tick, error) {
	rows, err := m.db.QueryContext(ctx, "SELECT queue, name, last_tick FROM queuegen_periodic ORDER BY queue, name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Tick
	for rows.Next() {
		var t Tick
		if err := rows.Scan(&t.Queue, &t.Name, &t.Last); err != nil {
			return nil, err
		}
		t.Last = t.Last.UTC()
		out = append(out, t)
	}
	return out, rows.Err()
}
