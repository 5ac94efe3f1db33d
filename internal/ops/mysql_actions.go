package ops

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

func (m *myBackend) count(ctx context.Context, q Queue, f Filter, action Action) (int64, error) {
	t, err := m.table(q)
	if err != nil {
		return 0, err
	}
	where, args, err := m.filterWhere(ctx, q, t, f)
	if err != nil {
		return 0, err
	}
	src, err := m.from(ctx, q, "")
	if err != nil {
		return 0, err
	}
	var n int64
	err = m.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+src+" WHERE "+where+" AND "+applicable[action].my, args...).Scan(&n)
	return n, err
}

func (m *myBackend) matching(ctx context.Context, q Queue, f Filter, action Action) ([]int64, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	where, args, err := m.filterWhere(ctx, q, t, f)
	if err != nil {
		return nil, err
	}
	src, err := m.from(ctx, q, "")
	if err != nil {
		return nil, err
	}
	return collectIDs(ctx, m.db, "SELECT id FROM "+src+" WHERE "+where+" AND "+applicable[action].my+" ORDER BY id", args...)
}

func (m *myBackend) now(ctx context.Context) (t time.Time, err error) {
	return t, m.db.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&t)
}

// begin begins a batch at READ COMMITTED: its locking reads then lock the
// rows they return and no gaps, which concurrent claims and pushes would
// otherwise wait on (REPEATABLE READ, MySQL's default, locks gaps).
func (m *myBackend) begin(ctx context.Context, q Queue) (batch, error) {
	ts, err := m.jobTables(ctx, q)
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
	return &myBatch{m: m, tx: tx, q: q, table: ts[0], tables: ts, failures: slices.Contains(cols, "failures")}, nil
}

// retryable: a deadlock (1213) or a serialization failure (SQLSTATE
// 40001) rolled the transaction back.
func (m *myBackend) retryable(err error) bool {
	var my *mysql.MySQLError
	return errors.As(err, &my) && (my.Number == erDeadlock || string(my.SQLState[:]) == "40001")
}

func (m *myBackend) setPaused(ctx context.Context, q Queue, paused bool) error {
	_, err := m.db.ExecContext(ctx, "UPDATE queuegen_queues SET paused = ? WHERE name = ?", paused, q.Name)
	return err
}

// myBatch is a batch of Apply on MySQL.
type myBatch struct {
	m     *myBackend
	tx    *sql.Tx
	q     Queue
	table string
	// tables are the tables of the queue's jobs: table, then its
	// backlog if it has one (see mysql_backlog.go). A job is in one of
	// them: each read and change covers both.
	tables []string
	// failures: the table has its failures column (its migration is
	// applied), where a cancel records its time and attempt.
	failures bool
}

func (b *myBatch) lock(ctx context.Context, ids []int64, action Action) ([]candidate, error) {
	var cands []candidate
	for _, t := range b.tables {
		rows, err := b.tx.QueryContext(ctx, "SELECT id, unique_key FROM "+t+" WHERE id IN ("+placeholders(len(ids))+") AND "+
			applicable[action].my+" ORDER BY id FOR UPDATE SKIP LOCKED", anys(ids)...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var c candidate
			if err := rows.Scan(&c.id, &c.key); err != nil {
				rows.Close()
				return nil, err
			}
			cands = append(cands, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(cands, func(x, y candidate) int { return cmp.Compare(x.id, y.id) })
	return cands, nil
}

func (b *myBatch) matching(ctx context.Context, ids []int64, action Action) ([]int64, error) {
	var out []int64
	for _, t := range b.tables {
		got, err := collectIDs(ctx, b.tx, "SELECT id FROM "+t+" WHERE id IN ("+placeholders(len(ids))+") AND "+
			applicable[action].my+" ORDER BY id", anys(ids)...)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	slices.Sort(out)
	return out, nil
}

// holders reads, in a queue with unique keys, the unique index itself:
// unique_active is the key of an unfinished job.
func (b *myBatch) holders(ctx context.Context, keys []string, ids []int64) (map[string]int64, error) {
	var active int
	err := b.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'unique_active'`, b.q.Table).Scan(&active)
	if err != nil {
		return nil, err
	}
	key, unfinished := "unique_active", ""
	if active == 0 {
		key, unfinished = "unique_key", " AND state IN ('available', 'running')"
	}
	rows, err := b.tx.QueryContext(ctx, "SELECT "+key+", MAX(id) FROM "+b.table+" WHERE "+key+" IN ("+placeholders(len(keys))+")"+unfinished+
		" AND id NOT IN ("+placeholders(len(ids))+") GROUP BY "+key, append(anys(keys), anys(ids)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanHolders(rows)
}

// change changes the rows lock locked: they are this transaction's, in a
// state the action applies to, so each one changes. (MySQL assigns left
// to right: no assignment reads a column an earlier one set.)
func (b *myBatch) change(ctx context.Context, action Action, ids []int64) ([]int64, error) {
	in := " WHERE id IN (" + placeholders(len(ids)) + ")"
	args := anys(ids)
	var stmt string
	switch action {
	case Retry:
		stmt = "UPDATE {table}" + ` SET state = 'available', run_after = UTC_TIMESTAMP(6), finished_at = NULL,
    locked_by = NULL, locked_until = NULL, max_attempts = GREATEST(max_attempts, attempt + 1)` + in
	case Cancel:
		// The cancel's error goes with its time and attempt, in the same
		// row update, as the runtime's failures do (see the queries'
		// failure part): failures is assigned before errors, so it reads
		// the index the error takes.
		failures := ""
		if b.failures {
			failures = `
    failures = JSON_ARRAY_APPEND(COALESCE(failures, JSON_ARRAY()), '$', JSON_OBJECT('at', DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%dT%H:%i:%s.%fZ'), 'attempt', attempt, 'error', JSON_LENGTH(errors))),`
		}
		stmt = "UPDATE {table}" + ` SET state = 'dead', finished_at = UTC_TIMESTAMP(6), locked_by = NULL, locked_until = NULL,` + failures + `
    errors = JSON_ARRAY_APPEND(errors, '$', ?)` + in
		args = append([]any{cancelled}, args...)
	case Purge:
		stmt = "DELETE FROM {table}" + in
	default:
		return nil, fmt.Errorf("unknown action %q", action)
	}
	for _, t := range b.tables {
		if _, err := b.tx.ExecContext(ctx, strings.Replace(stmt, "{table}", t, 1), args...); err != nil {
			return nil, err
		}
	}
	return slices.Clone(ids), nil
}

func (b *myBatch) commit(context.Context) error { return b.tx.Commit() }

func (b *myBatch) rollback(context.Context) { b.tx.Rollback() }
