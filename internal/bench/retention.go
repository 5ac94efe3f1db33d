package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuegen/queuegen/internal/bench/jobs"
)

// retentionTarget is a target whose engine has the archive
// (on_success: archive): PostgreSQL.
type retentionTarget interface {
	// fillFinished puts n succeeded jobs, finished days days ago, into
	// bench_kept (archive false) or, spread over days daily partitions
	// ending three days ago, into bench_archived's archive.
	fillFinished(ctx context.Context, n, days int, archive bool) error
	// purge is the queue's Purge.
	purge(ctx context.Context, archive bool, max int) (int64, error)
	// deadTuples are the dead rows left in the queue's tables (the
	// archive's partitions included), and bytes their size.
	deadTuples(ctx context.Context, archive bool) (dead, bytes int64, err error)
}

// runRetention measures retention removing Jobs finished jobs past it, as
// a Maintainer does (Purge in batches of Batch until one comes back
// short): from an on_success: keep queue, row by row, and from an
// on_success: archive queue, whose daily partitions (ten here) Purge drops
// whole. Each prints its summary line and the dead tuples and size left.
func runRetention(ctx context.Context, t target, cfg Config) error {
	rt, ok := t.(retentionTarget)
	if !ok { // Run refuses it first
		return errors.New("the retention workload " + postgresOnly[Retention])
	}
	for _, archive := range []bool{false, true} {
		name := "retention/keep"
		if archive {
			name = "retention/archive"
		}
		if err := t.setup(ctx); err != nil {
			return err
		}
		if err := rt.fillFinished(ctx, cfg.Jobs, 10, archive); err != nil {
			return fmt.Errorf("%s: filling: %w", name, err)
		}
		_, before, err := rt.deadTuples(ctx, archive)
		if err != nil {
			return err
		}
		start := time.Now()
		var removed int64
		for {
			n, err := rt.purge(ctx, archive, cfg.Batch)
			removed += n
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if n < int64(cfg.Batch) {
				break
			}
		}
		took := time.Since(start)
		if removed != int64(cfg.Jobs) {
			return fmt.Errorf("%s: purged %d jobs, want %d", name, removed, cfg.Jobs)
		}
		dead, after, err := rt.deadTuples(ctx, archive)
		if err != nil {
			return err
		}
		cfg.summary(name, removed, took, nil)
		fmt.Fprintf(cfg.notes(), "  %s: %d dead tuples left for vacuum; tables %s → %s\n", name, dead, mb(before), mb(after))
	}
	return nil
}

func (t *pgTarget) fillFinished(ctx context.Context, n, days int, archive bool) error {
	if !archive {
		if _, err := t.pool.Exec(ctx, `INSERT INTO `+Schema+`.bench_kept_queue (state, attempt, max_attempts, attempted_at, finished_at, recipient, n)
SELECT 'succeeded', 1, $1, now(), now() - make_interval(days => 3 + g % $3), 'a@example.com', g FROM generate_series(1, $2) AS g`,
			jobs.BenchKeptMaxAttempts, n, days); err != nil {
			return err
		}
		_, err := t.pool.Exec(ctx, "VACUUM ANALYZE "+Schema+".bench_kept_queue")
		return err
	}
	var today time.Time
	if err := t.pool.QueryRow(ctx, "SELECT date_trunc('day', now() AT TIME ZONE 'UTC')").Scan(&today); err != nil {
		return err
	}
	for d := range days {
		day := today.AddDate(0, 0, -3-d)
		if _, err := t.pool.Exec(ctx, fmt.Sprintf("CREATE TABLE %s.bench_archived_queue_archive_p%s PARTITION OF %s.bench_archived_queue_archive FOR VALUES FROM ('%s') TO ('%s')",
			Schema, day.Format("20060102"), Schema, day.Format(time.RFC3339), day.AddDate(0, 0, 1).Format(time.RFC3339))); err != nil {
			return err
		}
	}
	if _, err := t.pool.Exec(ctx, `INSERT INTO `+Schema+`.bench_archived_queue_archive (id, state, attempt, max_attempts, run_after, created_at, attempted_at, finished_at, errors, recipient, n)
SELECT g, 'succeeded', 1, $1, now(), now(), now(), date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - make_interval(days => 3 + g % $3) + interval '1 hour', '{}', 'a@example.com', g
FROM generate_series(1, $2) AS g`, jobs.BenchArchivedMaxAttempts, n, days); err != nil {
		return err
	}
	_, err := t.pool.Exec(ctx, "VACUUM ANALYZE "+Schema+".bench_archived_queue_archive")
	return err
}

func (t *pgTarget) purge(ctx context.Context, archive bool, max int) (int64, error) {
	if archive {
		return jobs.NewBenchArchivedQueue(t.pool).Purge(ctx, max)
	}
	return jobs.NewBenchKeptQueue(t.pool).Purge(ctx, max)
}

func (t *pgTarget) deadTuples(ctx context.Context, archive bool) (dead, bytes int64, err error) {
	like := "bench_kept_queue"
	if archive {
		like = "bench_archived_queue%"
	}
	t.pool.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	err = t.pool.QueryRow(ctx, `SELECT coalesce(sum(n_dead_tup), 0)::bigint, coalesce(sum(pg_total_relation_size(relid)), 0)::bigint
FROM pg_stat_user_tables WHERE schemaname = $1 AND relname LIKE $2`, Schema, like).Scan(&dead, &bytes)
	return dead, bytes, err
}
