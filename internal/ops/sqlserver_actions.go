package ops

import (
	"context"
	"database/sql"
	"slices"
)

// heldMatching lists, ascending, the held jobs (see msHeld) of q's table
// t matching f that action applies to: a read that passes over locked
// rows misses them, and Apply reports them as locked.
func (m *msBackend) heldMatching(ctx context.Context, t string, held []int64, f Filter, action Action) ([]int64, error) {
	if len(held) == 0 {
		return nil, nil
	}
	where, args := msWhere(f, held, 2, 0)
	return collectIDs(ctx, m.db, m.sql.heldMatching(t, where, action), append([]any{jsonArray(held)}, args...)...)
}

// count counts the jobs a read passing over locked rows finds, and the
// held ones (see heldMatching).
func (m *msBackend) count(ctx context.Context, q Queue, f Filter, action Action) (int64, error) {
	t, err := m.table(q)
	if err != nil {
		return 0, err
	}
	held, err := m.msHeld(ctx, q, t, nil)
	if err != nil {
		return 0, err
	}
	where, args := msWhere(f, held, 1, 0)
	var n int64
	if err := m.db.QueryRowContext(ctx, m.sql.count(t, where, action), args...).Scan(&n); err != nil {
		return 0, err
	}
	more, err := m.heldMatching(ctx, t, held, f, action)
	return n + int64(len(more)), err
}

// matching is the jobs a read passing over locked rows finds, and the
// held ones (see heldMatching).
func (m *msBackend) matching(ctx context.Context, q Queue, f Filter, action Action) ([]int64, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	held, err := m.msHeld(ctx, q, t, nil)
	if err != nil {
		return nil, err
	}
	where, args := msWhere(f, held, 1, 0)
	ids, err := collectIDs(ctx, m.db, m.sql.matching(t, msReadPast, where, action), args...)
	if err != nil {
		return nil, err
	}
	more, err := m.heldMatching(ctx, t, held, f, action)
	if err != nil {
		return nil, err
	}
	ids = append(ids, more...)
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// begin begins a batch at READ COMMITTED (its locks are those its hints
// take; each connection waits at most lockTimeout for any other).
func (m *msBackend) begin(ctx context.Context, q Queue) (batch, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	cols, err := m.columns(ctx, q)
	if err != nil {
		return nil, err
	}
	tx, err := m.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, err
	}
	return &msBatch{m: m, tx: tx, table: t, failures: slices.Contains(cols, "failures")}, nil
}

// msBatch is a batch of Apply on SQL Server.
type msBatch struct {
	m     *msBackend
	tx    *sql.Tx
	table string
	// failures: the table has its failures column.
	failures bool
}

func (b *msBatch) lock(ctx context.Context, ids []int64, action Action) ([]candidate, error) {
	rows, err := b.tx.QueryContext(ctx, b.m.sql.lock(b.table, action), jsonArray(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cands []candidate
	for rows.Next() {
		var c candidate
		if err := rows.Scan(&c.id, &c.key); err != nil {
			return nil, err
		}
		cands = append(cands, c)
	}
	return cands, rows.Err()
}

func (b *msBatch) matching(ctx context.Context, ids []int64, action Action) ([]int64, error) {
	return collectIDs(ctx, b.tx, b.m.sql.batchMatching(b.table, action), jsonArray(ids))
}

func (b *msBatch) holders(ctx context.Context, keys []string, ids []int64) (map[string]int64, error) {
	rows, err := b.tx.QueryContext(ctx, b.m.sql.holders(b.table), jsonArray(keys), jsonArray(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanHolders(rows)
}

func (b *msBatch) change(ctx context.Context, action Action, ids []int64) ([]int64, error) {
	stmt, err := b.m.sql.change(b.table, action, b.failures)
	if err != nil {
		return nil, err
	}
	args := []any{jsonArray(ids)}
	if action == Cancel {
		args = append(args, cancelled)
	}
	if _, err := b.tx.ExecContext(ctx, stmt, args...); err != nil {
		return nil, err
	}
	return slices.Clone(ids), nil
}

func (b *msBatch) commit(context.Context) error { return b.tx.Commit() }

func (b *msBatch) rollback(context.Context) { b.tx.Rollback() }
