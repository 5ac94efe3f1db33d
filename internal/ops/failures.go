package ops

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuegen/queuegen/queue/queueimpl"
)

// Failure is one of a job's errors with when and at which attempt it was
// recorded, as the jobs command shows it.
type Failure struct {
	// At is when the error was recorded, by the database's clock; nil for
	// an error recorded before the table had its failures column.
	At *time.Time `json:"at"`
	// Attempt is the attempt that failed; nil where At is.
	Attempt *int32 `json:"attempt"`
	// Error is the error's text, less the stack of a panic.
	Error string `json:"error"`
	// Stack is the goroutine's stack where the handler panicked.
	Stack string `json:"stack,omitempty"`
}

// failuresOf pairs errs, a job's errors, with doc, its failures column
// (nil when NULL or when the table has none), as the runtime does.
func failuresOf(errs []string, doc []byte) []Failure {
	out := []Failure{}
	for _, f := range queueimpl.Failures(errs, doc) {
		o := Failure{Error: f.Error, Stack: f.Stack}
		if !f.At.IsZero() {
			at, attempt := f.At, f.Attempt
			o.At, o.Attempt = &at, &attempt
		}
		out = append(out, o)
	}
	return out
}

// Hour is how a queue's attempts ended over the last hour, as far as the
// database keeps them: the errors recorded (the failures column's objects
// timed within the hour, in the queue's table and its archive: failed
// attempts, panics, timeouts, discards, leases that expired and nodes
// restarted on the last attempt, operators' cancels) and the jobs that
// succeeded (finished_at within the hour, state succeeded, in the table
// and the archive). Snoozes and releases end no attempt and are counted
// nowhere, nor are leases lost without an error.
type Hour struct {
	// Known is false when the hour was not measured: the table has no
	// failures column yet (its migration is not applied), or counting
	// took longer than the budget.
	Known bool
	// Failures are the errors recorded in the hour, in jobs still kept.
	Failures int64
	// Succeeded are the jobs that succeeded in the hour, where Kept.
	Succeeded int64
	// Kept is true where the database keeps the queue's succeeded jobs
	// (an archive, or succeeded jobs in its table, of any time), so that
	// Succeeded counts them: on_success: delete keeps none, and a queue
	// whose table holds no succeeded job may be one.
	Kept bool
}

// Rate is Failures ÷ (Failures + Succeeded): the share of the attempts
// ended in the hour that failed; ok is false where the hour is not
// known, the queue keeps no succeeded jobs to divide by, or no attempt
// ended.
func (h Hour) Rate() (rate float64, ok bool) {
	if !h.Known || !h.Kept || h.Failures+h.Succeeded == 0 {
		return 0, false
	}
	return float64(h.Failures) / float64(h.Failures+h.Succeeded), true
}

// lastHour measures q's last hour within budget (see Hour).
func (c *Conn) lastHour(ctx context.Context, q Queue, budget time.Duration) (Hour, error) {
	cols, err := c.b.columns(ctx, q)
	if err != nil || !slices.Contains(cols, "failures") {
		return Hour{}, err
	}
	h, known, err := c.b.lastHour(ctx, q, budget)
	if err != nil || !known {
		return Hour{}, err
	}
	h.Known = true
	if !h.Kept {
		h.Succeeded = 0
	}
	return h, nil
}

// setHour puts h in s's fields.
func (s *Stats) setHour(h Hour) {
	s.FailuresLastHour, s.SucceededLastHour, s.FailureRate = nil, nil, nil
	if !h.Known {
		return
	}
	s.FailuresLastHour = &h.Failures
	if h.Kept {
		s.SucceededLastHour = &h.Succeeded
	}
	if r, ok := h.Rate(); ok {
		s.FailureRate = &r
	}
}

// pgLastHour counts the hour's errors by the failures column's times: a
// job's objects are appended in time order, so only a job whose last
// object falls within the hour has any there, and only its objects are
// read. The archive, partitioned by finished_at, is read for the hour's
// partitions only.
func (p *pgBackend) lastHour(ctx context.Context, q Queue, budget time.Duration) (h Hour, known bool, err error) {
	var archiveName *string
	arch := pgx.Identifier{p.schema, q.Table + "_archive"}.Sanitize()
	if err := p.pool.QueryRow(ctx, "SELECT to_regclass($1)::text", arch).Scan(&archiveName); err != nil {
		return h, false, err
	}
	const counts = `coalesce(sum((SELECT count(*) FROM jsonb_array_elements(failures) AS f
                  WHERE (f->>'at')::timestamptz > now() - interval '1 hour'))
             FILTER (WHERE (failures->-1->>'at')::timestamptz > now() - interval '1 hour'), 0),
    count(*) FILTER (WHERE state = 'succeeded' AND finished_at > now() - interval '1 hour'),
    coalesce(bool_or(state = 'succeeded'), false)`
	sql := "SELECT " + counts + "\nFROM " + p.table(q)
	if archiveName != nil {
		sql = `SELECT sum(failures)::bigint, sum(succeeded)::bigint, true FROM (
    SELECT ` + counts + ` FROM ` + p.table(q) + `
    UNION ALL
    SELECT ` + counts + ` FROM ` + arch + ` WHERE finished_at > now() - interval '1 hour'
) AS hour(failures, succeeded, kept)`
	}
	timedOut, err := p.pgWithin(ctx, budget, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, sql).Scan(&h.Failures, &h.Succeeded, &h.Kept)
	})
	return h, !timedOut && err == nil, err
}

// myLastHour counts as pgLastHour does. The times are RFC 3339 in UTC
// with six digits (see the queries' failure part), so they compare as
// text. The archive (<table>_archive, where the queue has one),
// partitioned by finished_at, is read for the hour's partitions only.
func (m *myBackend) lastHour(ctx context.Context, q Queue, budget time.Duration) (h Hour, known bool, err error) {
	t, err := m.from(ctx, q, "job")
	if err != nil {
		return h, false, err
	}
	var archives int
	if err := m.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
		q.Table+"_archive").Scan(&archives); err != nil {
		return h, false, err
	}
	const since = "DATE_FORMAT(UTC_TIMESTAMP(6) - INTERVAL 1 HOUR, '%Y-%m-%dT%H:%i:%s.%fZ')"
	counts := func(table string) string {
		return `SELECT
    COALESCE(SUM(CASE WHEN JSON_UNQUOTE(JSON_EXTRACT(failures, '$[last].at')) > ` + since + `
        THEN (SELECT COUNT(*) FROM JSON_TABLE(job.failures, '$[*]' COLUMNS (at VARCHAR(32) PATH '$.at')) AS f
              WHERE f.at > ` + since + `) END), 0) AS failures,
    COUNT(CASE WHEN state = 'succeeded' AND finished_at > UTC_TIMESTAMP(6) - INTERVAL 1 HOUR THEN 1 END) AS succeeded,
    COALESCE(MAX(state = 'succeeded'), FALSE) AS kept
FROM ` + table
	}
	query := counts(t)
	if archives > 0 {
		query = `SELECT CAST(SUM(failures) AS SIGNED), CAST(SUM(succeeded) AS SIGNED), TRUE FROM (
` + counts(t) + `
UNION ALL
` + counts("`"+q.Table+"_archive` AS job") + ` WHERE finished_at > UTC_TIMESTAMP(6) - INTERVAL 1 HOUR
) AS hour_counts`
	}
	timedOut, err := m.myWithin(ctx, budget, func(conn *sql.Conn) error {
		return conn.QueryRowContext(ctx, query).Scan(&h.Failures, &h.Succeeded, &h.Kept)
	})
	return h, !timedOut && err == nil, err
}

// String is the hour at a glance: the rate with what it divides ("7.5% of
// 40": 3 failures of 40 attempts ended), "3 failures" where no succeeded
// jobs are kept to divide by, "none" where no attempt ended, "-" where the
// hour is not known.
func (h Hour) String() string {
	if !h.Known {
		return "-"
	}
	if r, ok := h.Rate(); ok {
		return fmt.Sprintf("%s of %d", percent(r), h.Failures+h.Succeeded)
	}
	if h.Failures == 0 && h.Kept {
		return "none"
	}
	if h.Failures == 1 {
		return "1 failure"
	}
	return fmt.Sprintf("%d failures", h.Failures)
}

// percent is r as a percentage with a sensible number of digits.
func percent(r float64) string {
	switch p := r * 100; {
	case p == 0 || p == 100 || p >= 10:
		return fmt.Sprintf("%.0f%%", p)
	default:
		return fmt.Sprintf("%.1f%%", p)
	}
}

// Hour is the hour s's fields hold (see setHour).
func (s Stats) Hour() Hour {
	if s.FailuresLastHour == nil {
		return Hour{}
	}
	h := Hour{Known: true, Failures: *s.FailuresLastHour}
	if s.SucceededLastHour != nil {
		h.Kept, h.Succeeded = true, *s.SucceededLastHour
	}
	return h
}
