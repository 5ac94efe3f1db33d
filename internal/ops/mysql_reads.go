package ops

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

func (m *myBackend) columns(ctx context.Context, q Queue) ([]string, error) {
	if _, err := m.table(q); err != nil {
		return nil, err
	}
	rows, err := m.db.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, q.Table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("queue %s: no table %s in database %s", q.Name, q.Table, m.database)
	}
	return names, nil
}

// stats counts q's jobs as Stats documents: one statement of counts by
// state, then, for a transaction-mode queue, a locking read of the due
// jobs passing over those a transaction holds, both at one instant, now,
// read from the database's clock.
func (m *myBackend) stats(ctx context.Context, q Queue, s *Stats) error {
	return m.statsOn(ctx, m.db, q, s)
}

// myBeginner is a pool or one of its connections.
type myBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

func (m *myBackend) statsOn(ctx context.Context, db myBeginner, q Queue, s *Stats) error {
	t, err := m.table(q)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var now time.Time
	if err := tx.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&now); err != nil {
		return err
	}
	src, err := m.from(ctx, q, "")
	if err != nil {
		return err
	}
	var due, claims int64
	var oldest *time.Time
	err = tx.QueryRowContext(ctx, `SELECT
    COUNT(CASE WHEN state = 'available' AND run_after <= ? THEN 1 END),
    COUNT(CASE WHEN state = 'available' AND run_after > ? AND JSON_LENGTH(errors) = 0 THEN 1 END),
    COUNT(CASE WHEN state = 'available' AND run_after > ? AND JSON_LENGTH(errors) > 0 THEN 1 END),
    COUNT(CASE WHEN state = 'running' AND (locked_until IS NULL OR locked_until >= ?) THEN 1 END),
    COUNT(CASE WHEN state = 'running' AND locked_until < ? THEN 1 END),
    COUNT(CASE WHEN state = 'succeeded' THEN 1 END),
    COUNT(CASE WHEN state = 'dead' THEN 1 END),
    MIN(CASE WHEN state = 'available' AND run_after <= ? THEN run_after END),
    COUNT(CASE WHEN attempted_at > ? THEN 1 END)
FROM `+src, now, now, now, now, now, now, now.Add(-time.Minute)).Scan(&due, &s.Scheduled, &s.Retrying, &s.Running, &s.Expired, &s.Succeeded, &s.Dead, &oldest, &claims)
	if err != nil {
		return err
	}
	s.Ready = due
	if q.Mode == "transaction" && due > 0 {
		// A transaction-mode worker holds its job by the claiming
		// transaction's row lock, which no plain read sees; its job is
		// due (a claim takes due jobs and leaves run_after as it was).
		// Count the due jobs that can be locked: the others are held.
		var free int64
		err := tx.QueryRowContext(ctx, "SELECT COUNT(*), MIN(run_after) FROM "+t+
			" WHERE state = 'available' AND run_after <= ? FOR UPDATE SKIP LOCKED", now).Scan(&free, &oldest)
		if err != nil {
			return err
		}
		s.Ready = min(due, free)
		s.Running += due - s.Ready
	}
	if oldest != nil {
		s.OldestAge = max(now.Sub(*oldest).Seconds(), 0)
	}
	s.ClaimsPerSecond = float64(claims) / 60
	return nil
}

func (m *myBackend) baseStats(context.Context, string, *Stats) error { return ErrNoBaseTable }

func (m *myBackend) jobs(ctx context.Context, q Queue, f Filter, before int64, limit int) ([]Job, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	cols, failures, err := m.payloadColumns(ctx, q)
	if err != nil {
		return nil, err
	}
	if f.ID == 0 && f.State == "running" {
		// The held jobs are among the running ones: find them all first.
		held, err := m.heldIn(ctx, q, t)
		if err != nil {
			return nil, err
		}
		where, args := myWhere(f, held)
		jobs, err := m.pages(ctx, q, cols, failures, where, args, before, limit)
		for i := range jobs {
			if slices.Contains(held, jobs[i].ID) {
				jobs[i].State, jobs[i].Held = "running", true
			}
		}
		return jobs, err
	}
	// Otherwise a held job is shown running, or (available, failed) left
	// out: each page's due jobs are probed, and a page short of the jobs
	// it left out is topped up from below its last id. Held jobs are few
	// (one per worker at most), so this costs a page or two, however many
	// jobs are due.
	leaveOut := f.ID == 0 && heldMatters(f.State)
	where, args := myWhere(f, nil)
	jobs := []Job{}
	for len(jobs) < limit {
		want := limit - len(jobs)
		page, err := m.pages(ctx, q, cols, failures, where, args, before, want)
		if err != nil {
			return nil, err
		}
		var due []int64
		for _, j := range page {
			if j.State == "available" {
				due = append(due, j.ID)
			}
		}
		held, err := m.heldAmong(ctx, q, t, due)
		if err != nil {
			return nil, err
		}
		for _, j := range page {
			if slices.Contains(held, j.ID) {
				if leaveOut {
					continue
				}
				j.State, j.Held = "running", true
			}
			jobs = append(jobs, j)
		}
		if len(page) < want {
			break
		}
		before = page[len(page)-1].ID
	}
	return jobs, nil
}

// page reads up to limit jobs of table t matching where, newest first,
// with ids below before when it is > 0; failures says whether t has the
// failures column (a table not yet migrated has not).
func (m *myBackend) page(ctx context.Context, t string, cols []myColumn, failures bool, where string, args []any, before int64, limit int) ([]Job, error) {
	args = slices.Clone(args)
	if before > 0 {
		where += " AND id < ?"
		args = append(args, before)
	}
	args = append(args, limit)
	failuresColumn := "NULL"
	if failures {
		failuresColumn = "failures"
	}
	var sel strings.Builder
	for _, c := range cols {
		sel.WriteString(", " + quoteColumn(c.name))
	}
	rows, err := m.db.QueryContext(ctx, `SELECT id, state, attempt, max_attempts, priority, run_after, created_at, attempted_at,
    finished_at, locked_by, locked_until, unique_key, errors, `+failuresColumn+sel.String()+`
FROM `+t+` WHERE `+where+` ORDER BY id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var jobs []Job
	for rows.Next() {
		var j Job
		var errs, fails []byte
		values := make([]any, len(cols))
		dest := []any{&j.ID, &j.State, &j.Attempt, &j.MaxAttempts, &j.Priority, &j.RunAfter, &j.CreatedAt, &j.AttemptedAt,
			&j.FinishedAt, &j.LockedBy, &j.LockedUntil, &j.UniqueKey, &errs, &fails}
		for i := range values {
			dest = append(dest, &values[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if j.Errors, err = errorList(errs); err != nil {
			return nil, fmt.Errorf("job %d: errors: %w", j.ID, err)
		}
		j.Failures = failuresOf(j.Errors, fails)
		if j.Payload, err = payloadJSON(cols, values); err != nil {
			return nil, fmt.Errorf("job %d: payload: %w", j.ID, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, rows.Err()
}

// errorList reads the errors column, a JSON array of strings; anything
// else in it is kept as its JSON text.
func errorList(doc []byte) ([]string, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(raw))
	for _, r := range raw {
		var s string
		if json.Unmarshal(r, &s) != nil {
			s = string(r)
		}
		out = append(out, s)
	}
	return out, nil
}
