package ops

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queuegen/queuegen/internal/spec"
)

// Glance is one queue's counts as a screen that refreshes every few
// seconds shows them: the counts of Stats when one statement counts them
// within a time budget, and otherwise, for a table too large to count in
// that time, the query planner's estimates from the table's statistics,
// marked Estimated. Either way it costs at most the budget and a few
// catalog reads, however large the table grows; where it counted
// exactly, the last hour's failures (Hour) take at most the budget again.
type Glance struct {
	Queue Queue
	// Counts are by state, as Stats partitions them, in the order of
	// GlanceStates.
	Counts [7]int64
	// Estimated is true when the counts are the planner's estimates.
	Estimated bool
	// OldestAge is the age of the oldest due job (0 for none); when
	// OldestKnown is false, finding it took longer than the budget.
	OldestAge   time.Duration
	OldestKnown bool
	// Hour is how the queue's attempts ended over the last hour, counted
	// within the budget too (Hour.Known is false past it); HourProblem is
	// why counting it failed, if it did.
	Hour        Hour
	HourProblem string
}

// GlanceStates are the states of Glance.Counts, in order.
var GlanceStates = [7]string{"available", "scheduled", "retrying", "running", "expired", "succeeded", "dead"}

// Glance reads q's counts within about budget (see Glance), and, where
// it counted them exactly, the last hour's failures within as much again.
func (c *Conn) Glance(ctx context.Context, q Queue, budget time.Duration) (Glance, error) {
	s, err := c.statsWithin(ctx, q, budget)
	g := Glance{Queue: q, Counts: [7]int64{s.Ready, s.Scheduled, s.Retrying, s.Running, s.Expired, s.Succeeded, s.Dead},
		Estimated: s.Estimated, OldestAge: time.Duration(s.OldestAge * float64(time.Second)), OldestKnown: !s.OldestUnknown}
	if err == nil && !s.Estimated {
		// The hour reads the table as the exact counts do: only where
		// they could, within the budget. Its failure is the hour's
		// alone: the counts stand.
		var herr error
		if g.Hour, herr = c.lastHour(ctx, q, budget); herr != nil {
			g.HourProblem = herr.Error()
		}
	}
	return g, err
}

// QueueStatsWithin is QueueStats for tables of any size: each queue is
// counted exactly where Glance can within budget, and otherwise its
// Stats hold the planner's estimates, marked Estimated (see Stats).
func (c *Conn) QueueStatsWithin(ctx context.Context, budget time.Duration) ([]Stats, error) {
	return c.eachQueue(ctx, func(q Queue) (Stats, error) {
		s, err := c.statsWithin(ctx, q, budget)
		if err != nil || s.Estimated { // the hour reads what the counts could not
			return s, err
		}
		h, err := c.lastHour(ctx, q, budget)
		s.setHour(h)
		return s, queueErr(q, err)
	})
}

// statsWithin is q's Stats, counted exactly (with the claims per second)
// when one statement can count them within budget, else the planner's
// estimates, marked Estimated.
func (c *Conn) statsWithin(ctx context.Context, q Queue, budget time.Duration) (Stats, error) {
	s := Stats{Queue: q.Name, Paused: q.Paused}
	rows, err := c.b.rows(ctx, q) // its errors name the queue
	if err != nil {
		return s, err
	}
	if Countable(rows, budget) {
		exact, err := c.b.statsWithin(ctx, q, budget, &s)
		if err != nil || exact {
			return s, queueErr(q, err)
		}
	}
	s = Stats{Queue: q.Name, Paused: q.Paused, Estimated: true}
	for i, n := range []*int64{&s.Ready, &s.Scheduled, &s.Retrying, &s.Running, &s.Expired, &s.Succeeded, &s.Dead} {
		if *n, err = c.b.estimate(ctx, q, GlanceStates[i]); err != nil {
			return s, fmt.Errorf("queue %s: estimating the %s jobs: %w", q.Name, GlanceStates[i], err)
		}
	}
	// An index probe where the claim index leads with run_after; where
	// it leads with priority, a scan that a fifth of the budget rarely
	// covers, and then the age is unknown.
	age, known, err := c.b.oldestWithin(ctx, q, budget/5)
	s.OldestAge, s.OldestUnknown = age.Seconds(), !known
	return s, queueErr(q, err)
}

// queueErr names q in err, if there is one.
func queueErr(q Queue, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("queue %s: %w", q.Name, err)
}

// countRate is how many rows a second one statement counts, about, on a
// small server: a table the catalog says holds more rows than the budget
// lets it count is estimated without trying, so that a glance at a large
// table costs a few catalog reads and not the budget as well.
const countRate = 2_000_000

// Countable reports whether one statement counts rows rows, about, within
// budget: beyond that, a caller shows the planner's estimate without
// trying a count it would lose.
func Countable(rows int64, budget time.Duration) bool {
	return float64(rows) <= budget.Seconds()*countRate
}

// pgTimedOut reports a statement cancelled by statement_timeout (and not
// by ctx, which pgx cancels the same way).
func pgTimedOut(ctx context.Context, err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57014" && ctx.Err() == nil
}

// pgWithin runs f in a read-only transaction whose statements time out
// after budget; timedOut reports whether one did.
func (p *pgBackend) pgWithin(ctx context.Context, budget time.Duration, f func(tx pgx.Tx) error) (timedOut bool, err error) {
	tx, err := p.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// Without parallel workers, a statement stops at its timeout, not
	// once its workers have wound down. The timeout is set last, so that
	// it bounds f's statements and not the other SET (a budget of 1 ms on
	// a busy server once cancelled that SET instead).
	if _, err := tx.Exec(ctx, "SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL statement_timeout = "+
		strconv.FormatInt(max(budget.Milliseconds(), 1), 10)); err != nil {
		if pgTimedOut(ctx, err) {
			return true, nil
		}
		return false, err
	}
	if err := f(tx); err != nil {
		if pgTimedOut(ctx, err) {
			return true, nil
		}
		return false, err
	}
	return false, nil
}

func (p *pgBackend) statsWithin(ctx context.Context, q Queue, budget time.Duration, s *Stats) (bool, error) {
	timedOut, err := p.pgWithin(ctx, budget, func(tx pgx.Tx) error { return p.statsOf(ctx, tx, p.table(q), s) })
	return !timedOut && err == nil, err
}

func (p *pgBackend) oldestWithin(ctx context.Context, q Queue, budget time.Duration) (time.Duration, bool, error) {
	var age float64
	timedOut, err := p.pgWithin(ctx, budget, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT coalesce(extract(epoch FROM now() - min(run_after)), 0)::float8 FROM `+p.table(q)+
			` WHERE state = 'available' AND run_after <= now()`).Scan(&age)
	})
	return time.Duration(age * float64(time.Second)), !timedOut && err == nil, err
}

// rows is the catalog's estimate of q's rows, as the last VACUUM or
// ANALYZE left it (a table never analyzed counts 0: its reltuples is -1),
// in its table and the tables that inherit it (a backlog). Its errors
// name the queue.
func (p *pgBackend) rows(ctx context.Context, q Queue) (int64, error) {
	var n float64
	if err := p.pool.QueryRow(ctx, `SELECT coalesce(sum(greatest(reltuples, 0)), 0)::float8 FROM pg_class
WHERE oid = $1::regclass OR oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = $1::regclass)`, p.table(q)).Scan(&n); err != nil {
		return 0, fmt.Errorf("queue %s: %w", q.Name, err)
	}
	return int64(max(n, 0)), nil
}

// estimate is the planner's estimate of the rows of q in state, from
// EXPLAIN, which plans the count without running it. On a Citus
// distributed table the coordinator's own estimate is a placeholder
// (100,000): the estimate is then the sum of every shard's plan
// (citus.explain_all_tasks; EXPLAIN otherwise plans one shard, and one
// shard times the shard count said 32 for 3,000 jobs of one bucket whose
// shard it did not show).
func (p *pgBackend) estimate(ctx context.Context, q Queue, state string) (int64, error) {
	type rows struct {
		Rows float64 `json:"Plan Rows"`
	}
	var plan []struct {
		Plan struct {
			Rows        float64 `json:"Plan Rows"`
			Distributed *struct {
				Job struct {
					TaskCount int `json:"Task Count"`
					Tasks     []struct {
						RemotePlan [][]struct {
							Plan rows `json:"Plan"`
						} `json:"Remote Plan"`
					} `json:"Tasks"`
				} `json:"Job"`
			} `json:"Distributed Query"`
		} `json:"Plan"`
	}
	var doc []byte
	if err := p.bounded(ctx, func(tx pgx.Tx) error {
		if d, err := p.distributed(ctx, tx, p.table(q)); err != nil {
			return err
		} else if d {
			if _, err := tx.Exec(ctx, "SET LOCAL citus.explain_all_tasks = on"); err != nil {
				return err
			}
		}
		return tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) SELECT 1 FROM "+p.table(q)+" WHERE "+withHeld(predicates[state].pg, "false")).Scan(&doc)
	}); err != nil {
		return 0, err
	}
	if err := json.Unmarshal(doc, &plan); err != nil || len(plan) == 0 {
		return 0, fmt.Errorf("reading the plan %s: %v", doc, err)
	}
	if d := plan[0].Plan.Distributed; d != nil && len(d.Job.Tasks) > 0 {
		sum, planned := 0.0, 0
		for _, task := range d.Job.Tasks {
			if len(task.RemotePlan) > 0 && len(task.RemotePlan[0]) > 0 {
				sum += task.RemotePlan[0][0].Plan.Rows
				planned++
			}
		}
		if planned > 0 {
			// Every task shown (planned == TaskCount), unless Citus showed
			// fewer: then scaled to them all.
			return int64(sum * float64(max(d.Job.TaskCount, planned)) / float64(planned)), nil
		}
	}
	return int64(plan[0].Plan.Rows), nil
}

// myTimeout bounds every SELECT of one connection, on MariaDB
// (max_statement_time, in seconds) or MySQL (max_execution_time, in
// milliseconds); reset restores it.
func (m *myBackend) myTimeout(ctx context.Context, conn *sql.Conn, budget time.Duration) (reset func(), err error) {
	maria, err := m.isMariaDB(ctx)
	if err != nil {
		return nil, err
	}
	set := "SET SESSION max_execution_time = %d"
	value := max(budget.Milliseconds(), 1)
	if maria {
		set = "SET SESSION max_statement_time = %d/1000"
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(set, value)); err != nil {
		return nil, err
	}
	return func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf(set, 0)); err != nil {
			// A connection that keeps the timeout must not go back to
			// the pool.
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}, nil
}

// myTimedOut reports a statement stopped by myTimeout's limit: MariaDB's
// ER_STATEMENT_TIMEOUT or MySQL's ER_QUERY_TIMEOUT.
func myTimedOut(err error) bool {
	n := myErrno(err)
	return n == 1969 || n == 3024
}

// myWithin runs f on one connection whose SELECTs time out after budget.
func (m *myBackend) myWithin(ctx context.Context, budget time.Duration, f func(conn *sql.Conn) error) (timedOut bool, err error) {
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	reset, err := m.myTimeout(ctx, conn, budget)
	if err != nil {
		return false, err
	}
	defer reset()
	if err := f(conn); err != nil {
		if myTimedOut(err) {
			return true, nil
		}
		return false, err
	}
	return false, nil
}

func (m *myBackend) statsWithin(ctx context.Context, q Queue, budget time.Duration, s *Stats) (bool, error) {
	timedOut, err := m.myWithin(ctx, budget, func(conn *sql.Conn) error { return m.statsOn(ctx, conn, q, s) })
	return !timedOut && err == nil, err
}

func (m *myBackend) oldestWithin(ctx context.Context, q Queue, budget time.Duration) (time.Duration, bool, error) {
	t, err := m.from(ctx, q, "")
	if err != nil {
		return 0, false, err
	}
	var age sql.NullFloat64
	timedOut, err := m.myWithin(ctx, budget, func(conn *sql.Conn) error {
		return conn.QueryRowContext(ctx, `SELECT TIMESTAMPDIFF(MICROSECOND, MIN(run_after), UTC_TIMESTAMP(6)) / 1e6 FROM `+t+
			` WHERE state = 'available' AND run_after <= UTC_TIMESTAMP(6)`).Scan(&age)
	})
	return time.Duration(age.Float64 * float64(time.Second)), !timedOut && err == nil, err
}

// rows is InnoDB's estimate of q's rows, from its statistics. Its errors,
// m.table's among them, name the queue.
func (m *myBackend) rows(ctx context.Context, q Queue) (int64, error) {
	if _, err := m.table(q); err != nil {
		return 0, err
	}
	var n sql.NullInt64
	err := m.db.QueryRowContext(ctx, "SELECT table_rows FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?", q.Table).Scan(&n)
	if err == nil {
		// A backlog's rows are the queue's jobs too (see mysql_backlog.go).
		var b sql.NullInt64
		err = m.db.QueryRowContext(ctx, "SELECT COALESCE(SUM(table_rows), 0) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?",
			q.Table+spec.BacklogSuffix).Scan(&b)
		n.Int64 += b.Int64
	}
	if errors.Is(err, sql.ErrNoRows) {
		err = fmt.Errorf("no table %s", q.Table)
	}
	if err != nil {
		return 0, fmt.Errorf("queue %s: %w", q.Name, err)
	}
	return n.Int64, nil
}

// estimate is the optimizer's estimate of the rows of q in state: the
// rows column of EXPLAIN (InnoDB estimates a range of an index by diving
// into it), scaled by its filtered column where the server has one.
func (m *myBackend) estimate(ctx context.Context, q Queue, state string) (int64, error) {
	ts, err := m.jobTables(ctx, q)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range ts {
		e, err := m.estimateOf(ctx, t, state)
		if err != nil {
			return 0, err
		}
		n += e
	}
	return n, nil
}

// estimateOf is estimate for table t.
func (m *myBackend) estimateOf(ctx context.Context, t, state string) (int64, error) {
	rows, err := m.db.QueryContext(ctx, "EXPLAIN SELECT 1 FROM "+t+" WHERE "+withHeld(predicates[state].my, "FALSE"))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	if !rows.Next() {
		return 0, errors.Join(rows.Err(), errors.New("EXPLAIN returned no row"))
	}
	vals := make([]sql.NullString, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return 0, err
	}
	n, filtered := 0.0, 100.0
	for i, name := range names {
		switch name {
		case "rows":
			n, _ = strconv.ParseFloat(vals[i].String, 64)
		case "filtered":
			if f, err := strconv.ParseFloat(vals[i].String, 64); err == nil {
				filtered = f
			}
		}
	}
	return int64(n * filtered / 100), nil
}
