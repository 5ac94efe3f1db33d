package ops

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Holder is the session whose open snapshot (PostgreSQL) or transaction
// (InnoDB's read view) is the oldest on the server. While it stays open,
// no row version deleted or replaced after it began can be removed: the
// claim index keeps the entries of every job worked since, and each claim
// walks past them, so claims grow slower the longer it stays open (see
// BENCHMARKS.md, "Held snapshot").
type Holder struct {
	// PID is the server's id of the session (pg_stat_activity's pid,
	// MySQL's connection id).
	PID         int64
	User        string
	Application string
	// Age is how long its transaction has been open.
	Age time.Duration
	// Query is the start of its current or last statement, where the
	// server shows it to this user.
	Query string
}

// OldestSnapshot finds the session holding the oldest snapshot that holds
// back this database's cleanup (other than this connection's own); ok is
// false when none does. On PostgreSQL that is a session connected to this
// database (a snapshot in another database holds back no vacuum here), or
// a walsender, whose standby's feedback holds back every database's. On
// MySQL and MariaDB it is any session's: InnoDB's purge is one for the
// whole server, and a transaction open in any schema holds it back.
func (c *Conn) OldestSnapshot(ctx context.Context) (h Holder, ok bool, err error) {
	return c.b.oldestSnapshot(ctx)
}

func (p *pgBackend) oldestSnapshot(ctx context.Context) (Holder, bool, error) {
	var h Holder
	var age float64
	err := p.pool.QueryRow(ctx, `SELECT pid, coalesce(usename, ''), coalesce(application_name, ''),
       coalesce(extract(epoch FROM now() - coalesce(xact_start, backend_start)), 0)::float8, coalesce(left(query, 100), '')
FROM pg_stat_activity
WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid()
  AND (datname = current_database() OR backend_type = 'walsender')
ORDER BY age(backend_xmin) DESC
LIMIT 1`).Scan(&h.PID, &h.User, &h.Application, &age, &h.Query)
	if errors.Is(err, pgx.ErrNoRows) {
		return h, false, nil
	}
	h.Age = time.Duration(age * float64(time.Second))
	return h, err == nil, err
}

func (m *myBackend) oldestSnapshot(ctx context.Context) (Holder, bool, error) {
	var h Holder
	var age float64
	var user, query sql.NullString
	err := m.db.QueryRowContext(ctx, `SELECT t.trx_mysql_thread_id, p.USER, TIMESTAMPDIFF(MICROSECOND, t.trx_started, NOW()) / 1e6, LEFT(t.trx_query, 100)
FROM information_schema.innodb_trx AS t
LEFT JOIN information_schema.processlist AS p ON p.ID = t.trx_mysql_thread_id
WHERE t.trx_mysql_thread_id <> CONNECTION_ID()
ORDER BY t.trx_started
LIMIT 1`).Scan(&h.PID, &user, &age, &query)
	if errors.Is(err, sql.ErrNoRows) {
		return h, false, nil
	}
	h.User, h.Query, h.Age = user.String, query.String, time.Duration(age*float64(time.Second))
	return h, err == nil, err
}
