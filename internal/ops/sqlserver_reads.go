package ops

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// msHeld finds, ascending, the jobs a transaction in progress holds, of a
// transaction-mode queue's due jobs (of only, when not nil): the jobs its
// workers are working. A claim leaves its job available and due, adds one
// to its attempt, and holds the row locked until the worker's transaction
// ends; so the held jobs are the due jobs with an attempt that a NOLOCK
// read sees (it sees uncommitted rows) and a READPAST read passes over. A
// job pushed in a transaction still open is locked too, but has attempt
// 0; a job locked for the moment of another statement (an operator's
// retry) may be taken for held by a read that meets it. A lease-mode
// queue's jobs are held by a transaction only inside a claim's statement:
// none are found.
func (m *msBackend) msHeld(ctx context.Context, q Queue, t string, only []int64) ([]int64, error) {
	if q.Mode != "transaction" || (only != nil && len(only) == 0) {
		return nil, nil
	}
	now, err := m.now(ctx)
	if err != nil {
		return nil, err
	}
	args := []any{msTime(now)}
	if only != nil {
		args = append(args, jsonArray(only))
	}
	seen, err := collectIDs(ctx, m.db, m.sql.claimedDueIDs(t, msDirty, only != nil), args...)
	if err != nil || len(seen) == 0 {
		return nil, err
	}
	free, err := collectIDs(ctx, m.db, m.sql.claimedDueIDs(t, msReadPast, only != nil), args...)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(seen, func(id int64) bool { _, ok := slices.BinarySearch(free, id); return ok }), nil
}

// stats counts q's jobs as Stats documents, at one instant, now, read
// from the database's clock: one statement of counts by state that passes
// over locked rows, then, for a transaction-mode queue, the held jobs
// (see msHeld), counted running.
func (m *msBackend) stats(ctx context.Context, q Queue, s *Stats) error {
	t, err := m.table(q)
	if err != nil {
		return err
	}
	now, err := m.now(ctx)
	if err != nil {
		return err
	}
	var claims int64
	var oldest *time.Time
	err = m.db.QueryRowContext(ctx, m.sql.stats(t), msTime(now)).Scan(&s.Ready, &s.Scheduled, &s.Retrying, &s.Running, &s.Expired,
		&s.Succeeded, &s.Dead, &oldest, &claims)
	if err != nil {
		return err
	}
	if q.Mode == "transaction" {
		var seen, free int64
		if err := m.db.QueryRowContext(ctx, m.sql.claimedDue(t, msDirty), msTime(now)).Scan(&seen); err != nil {
			return err
		}
		if err := m.db.QueryRowContext(ctx, m.sql.claimedDue(t, msReadPast), msTime(now)).Scan(&free); err != nil {
			return err
		}
		s.Running += max(seen-free, 0)
	}
	if oldest != nil {
		s.OldestAge = max(now.Sub(oldest.UTC()).Seconds(), 0)
	}
	s.ClaimsPerSecond = float64(claims) / 60
	return nil
}

// msWithin runs f with a context that ends after budget: go-mssqldb
// cancels the statement running then (an attention to the server), and
// timedOut reports that it did.
func msWithin(ctx context.Context, budget time.Duration, f func(ctx context.Context) error) (timedOut bool, err error) {
	bounded, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	err = f(bounded)
	if err != nil && ctx.Err() == nil && errors.Is(bounded.Err(), context.DeadlineExceeded) {
		return true, nil
	}
	return false, err
}

func (m *msBackend) statsWithin(ctx context.Context, q Queue, budget time.Duration, s *Stats) (bool, error) {
	timedOut, err := msWithin(ctx, budget, func(ctx context.Context) error { return m.stats(ctx, q, s) })
	return !timedOut && err == nil, err
}

func (m *msBackend) oldestWithin(ctx context.Context, q Queue, budget time.Duration) (time.Duration, bool, error) {
	t, err := m.table(q)
	if err != nil {
		return 0, false, err
	}
	var age sql.NullFloat64
	timedOut, err := msWithin(ctx, budget, func(ctx context.Context) error {
		return m.db.QueryRowContext(ctx, m.sql.oldest(t)).Scan(&age)
	})
	return time.Duration(age.Float64 * float64(time.Second)), !timedOut && err == nil, err
}

func (m *msBackend) lastHour(ctx context.Context, q Queue, budget time.Duration) (h Hour, known bool, err error) {
	t, err := m.table(q)
	if err != nil {
		return h, false, err
	}
	timedOut, err := msWithin(ctx, budget, func(ctx context.Context) error {
		return m.db.QueryRowContext(ctx, m.sql.lastHour(t)).Scan(&h.Failures, &h.Succeeded, &h.Kept)
	})
	return h, !timedOut && err == nil, err
}

// rows is the row count of q's table from its partition statistics. Its
// errors, m.table's among them, name the queue.
func (m *msBackend) rows(ctx context.Context, q Queue) (int64, error) {
	t, err := m.table(q)
	if err != nil {
		return 0, err
	}
	var n sql.NullInt64
	err = m.db.QueryRowContext(ctx, m.sql.rows(), t).Scan(&n)
	if msDenied(err) {
		err = m.db.QueryRowContext(ctx, m.sql.catalogRows(), t).Scan(&n)
	}
	if err == nil && !n.Valid {
		err = fmt.Errorf("no table %s", q.Table)
	}
	if err != nil {
		return 0, fmt.Errorf("queue %s: %w", q.Name, err)
	}
	return n.Int64, nil
}

// estRows is the optimizer's estimate of a statement's rows, in its XML
// plan.
var estRows = regexp.MustCompile(`StatementEstRows="([^"]+)"`)

// estimate is the optimizer's estimate of the rows of q in state, from
// the estimated plan (SHOWPLAN_XML: the statement is compiled, not run),
// on one connection whose plan setting is turned off again after.
func (m *msBackend) estimate(ctx context.Context, q Queue, state string) (int64, error) {
	t, err := m.table(q)
	if err != nil {
		return 0, err
	}
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, m.sql.showplan(true)); err != nil {
		if msErrno(err) == msNoShowplan {
			err = fmt.Errorf("estimating a large table's counts needs the SHOWPLAN permission (GRANT SHOWPLAN TO the user): %w", err)
		}
		return 0, err
	}
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), m.sql.showplan(false)); err != nil {
			// A connection that still plans instead of running must not
			// go back to the pool.
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	var plan string
	if err := conn.QueryRowContext(ctx, m.sql.estimate(t, state)).Scan(&plan); err != nil {
		return 0, err
	}
	return planRows(plan)
}

// planRows reads the first statement's estimated rows from an XML plan.
func planRows(plan string) (int64, error) {
	found := estRows.FindStringSubmatch(plan)
	if found == nil {
		return 0, errors.New("the estimated plan has no StatementEstRows")
	}
	n, err := strconv.ParseFloat(found[1], 64)
	if err != nil {
		return 0, fmt.Errorf("the estimated plan's StatementEstRows %q: %w", found[1], err)
	}
	return int64(max(n, 0)), nil
}

func (m *msBackend) finished(ctx context.Context, q Queue, since time.Time, budget time.Duration) ([]Minute, bool, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, false, err
	}
	var out []Minute
	timedOut, err := msWithin(ctx, budget, func(ctx context.Context) error {
		rows, err := m.db.QueryContext(ctx, m.sql.finished(t), msTime(since))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var mi Minute
			if err := rows.Scan(&mi.At, &mi.N); err != nil {
				return err
			}
			mi.At = mi.At.UTC()
			out = append(out, mi)
		}
		return rows.Err()
	})
	return out, !timedOut && err == nil, err
}

// jobs reads a page of q's jobs: those no transaction holds, by a read
// that passes over the held ones (READPAST), and, in a transaction-mode
// queue, the held ones the filter selects, read as their holders have
// them (NOLOCK: their worker's attempt shows before it commits), merged
// newest first.
func (m *msBackend) jobs(ctx context.Context, q Queue, f Filter, before int64, limit int) ([]Job, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	cols, selects, failures, err := m.payloadColumns(ctx, q)
	if err != nil {
		return nil, err
	}
	held, err := m.msHeld(ctx, q, t, nil)
	if err != nil {
		return nil, err
	}
	where, args := msWhere(f, held, 2, before)
	jobs, err := m.scanJobs(ctx, cols, m.sql.page(t, where, failures, selects), append([]any{limit}, args...)...)
	if err != nil || len(held) == 0 {
		return jobs, err
	}
	heldJobs, err := m.scanJobs(ctx, cols, m.sql.heldPage(t, where, failures, selects), append([]any{jsonArray(held)}, args...)...)
	if err != nil {
		return nil, err
	}
	for _, j := range heldJobs {
		if slices.ContainsFunc(jobs, func(o Job) bool { return o.ID == j.ID }) {
			continue // its holder committed meanwhile: the page has it
		}
		j.State, j.Held, j.Uncommitted = "running", true, true
		jobs = append(jobs, j)
	}
	slices.SortFunc(jobs, func(a, b Job) int { return cmp.Compare(b.ID, a.ID) })
	return jobs[:min(len(jobs), limit)], nil
}

// scanJobs reads the jobs query (page or heldPage) returns.
func (m *msBackend) scanJobs(ctx context.Context, cols []myColumn, query string, args ...any) ([]Job, error) {
	rows, err := m.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	jobs := []Job{}
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
		j.RunAfter, j.CreatedAt = j.RunAfter.UTC(), j.CreatedAt.UTC()
		for _, t := range []*time.Time{j.AttemptedAt, j.FinishedAt, j.LockedUntil} {
			if t != nil {
				*t = t.UTC()
			}
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
