package ops

import (
	"cmp"
	"context"
	"slices"

	"github.com/queuegen/queuegen/internal/spec"
)

// A queue with a backlog (backlog: in the spec) keeps its jobs in two
// tables on MySQL: the queue table, which claims read, and
// <table>_backlog, where pushes wait until a scheduler step moves them,
// ids and all (a job is in one or the other). PostgreSQL's backlog
// inherits from the queue table, so every read and change of the queue
// table there covers the backlog's jobs; here the operations read and
// change both tables: the counts and the glance read their UNION ALL, the
// job lists merge a page of each, and an action's batch locks and changes
// the jobs in either.

// backlog is q's backlog table, quoted, or "" when q has none.
func (m *myBackend) backlog(ctx context.Context, q Queue) (string, error) {
	name := q.Table + spec.BacklogSuffix
	if !plainName.MatchString(name) {
		return "", nil // not a table queuegen made
	}
	var n int
	err := m.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.TABLES
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?`, name).Scan(&n)
	if err != nil || n == 0 {
		return "", err
	}
	return "`" + name + "`", nil
}

// jobTables are q's tables that hold jobs: its table, then its backlog.
func (m *myBackend) jobTables(ctx context.Context, q Queue) ([]string, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	b, err := m.backlog(ctx, q)
	if err != nil || b == "" {
		return []string{t}, err
	}
	return []string{t, b}, nil
}

// from is q's jobs as a FROM item named alias: its table, or with a
// backlog the UNION ALL of both tables (which have the same columns, in
// the same order).
func (m *myBackend) from(ctx context.Context, q Queue, alias string) (string, error) {
	ts, err := m.jobTables(ctx, q)
	if err != nil {
		return "", err
	}
	if len(ts) == 1 {
		if alias != "" {
			return ts[0] + " AS " + alias, nil
		}
		return ts[0], nil
	}
	if alias == "" {
		alias = "job"
	}
	return "(SELECT * FROM " + ts[0] + " UNION ALL SELECT * FROM " + ts[1] + ") AS " + alias, nil
}

// pages reads a page of each of q's tables (see page) and merges them,
// newest first.
func (m *myBackend) pages(ctx context.Context, q Queue, cols []myColumn, failures bool, where string, args []any, before int64, limit int) ([]Job, error) {
	ts, err := m.jobTables(ctx, q)
	if err != nil {
		return nil, err
	}
	var jobs []Job
	for _, t := range ts {
		page, err := m.page(ctx, t, cols, failures, where, args, before, limit)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, page...)
	}
	if len(ts) > 1 {
		slices.SortFunc(jobs, func(a, b Job) int { return cmp.Compare(b.ID, a.ID) })
		jobs = jobs[:min(len(jobs), limit)]
	}
	return jobs, nil
}
