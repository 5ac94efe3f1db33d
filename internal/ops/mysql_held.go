package ops

import (
	"context"
	"database/sql"
	"slices"
	"time"
)

// heldMatters reports whether which jobs are held changes which jobs the
// filter state selects (of the due ones, the only ones a worker holds).
func heldMatters(state string) bool {
	return state == "available" || state == "running" || state == "failed"
}

// heldIn finds, ascending, the jobs a transaction in progress holds, of a
// transaction-mode queue's due jobs: the jobs its workers are working,
// whose row locks no plain read sees. In one READ COMMITTED transaction, rolled back at once, it reads
// the due jobs plainly, then by a locking read that passes over held rows
// (FOR UPDATE SKIP LOCKED), and reads again those the lock passed over:
// the ones still due are held (the others changed meanwhile). The probe
// locks the free due jobs for the length of one scan, which claims
// meanwhile pass over, as stats' probe does. A lease-mode queue's jobs are
// held by a transaction only inside a claim's statement: none are found.
func (m *myBackend) heldIn(ctx context.Context, q Queue, t string) ([]int64, error) {
	return m.probe(ctx, q, t, nil, true)
}

// heldAmong is heldIn of the jobs of ids (none when ids is empty).
func (m *myBackend) heldAmong(ctx context.Context, q Queue, t string, ids []int64) ([]int64, error) {
	return m.probe(ctx, q, t, ids, false)
}

func (m *myBackend) probe(ctx context.Context, q Queue, t string, only []int64, all bool) ([]int64, error) {
	if q.Mode != "transaction" || (!all && len(only) == 0) {
		return nil, nil
	}
	tx, err := m.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var now time.Time
	if err := tx.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&now); err != nil {
		return nil, err
	}
	due, args := "state = 'available' AND run_after <= ?", []any{now}
	if !all {
		due += " AND id IN (" + placeholders(len(only)) + ")"
		args = append(args, anys(only)...)
	}
	seen, err := collectIDs(ctx, tx, "SELECT id FROM "+t+" WHERE "+due, args...)
	if err != nil || len(seen) == 0 {
		return nil, err
	}
	free, err := collectIDs(ctx, tx, "SELECT id FROM "+t+" WHERE "+due+" FOR UPDATE SKIP LOCKED", args...)
	if err != nil {
		return nil, err
	}
	lockable := make(map[int64]bool, len(free))
	for _, id := range free {
		lockable[id] = true
	}
	passed := slices.DeleteFunc(seen, func(id int64) bool { return lockable[id] })
	if len(passed) == 0 {
		return nil, nil
	}
	return collectIDs(ctx, tx, "SELECT id FROM "+t+" WHERE state = 'available' AND run_after <= ? AND id IN ("+placeholders(len(passed))+") ORDER BY id",
		append([]any{now}, anys(passed)...)...)
}

// filterWhere is myWhere of f, with the held jobs it needs found.
func (m *myBackend) filterWhere(ctx context.Context, q Queue, t string, f Filter) (string, []any, error) {
	var held []int64
	if f.ID == 0 && heldMatters(f.State) {
		var err error
		if held, err = m.heldIn(ctx, q, t); err != nil {
			return "", nil, err
		}
	}
	where, args := myWhere(f, held)
	return where, args, nil
}
