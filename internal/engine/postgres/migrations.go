package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	pgxdriver "github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queuegen/queuegen/internal/engine"
)

// PrepareMigrations creates the schema if it is missing.
func (Engine) PrepareMigrations(ctx context.Context, db *sql.DB, schema string) error {
	if schema == DefaultSchema {
		return nil
	}
	_, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgxdriver.Identifier{schema}.Sanitize())
	return err
}

// CurrentSchema is the schema unqualified tables are created in: the
// first of the connection's search_path that exists; "" when none does.
func (Engine) CurrentSchema(ctx context.Context, db *sql.DB) (string, error) {
	var schema sql.NullString
	err := db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema)
	return schema.String, err
}

// MigrationTables asks to_regclass in schema.
func (Engine) MigrationTables(schema, table string) (string, []any) {
	return `SELECT
    to_regclass(quote_ident($1) || '.queuegen_queues') IS NOT NULL,
    to_regclass(quote_ident($1) || '.' || quote_ident($2)) IS NOT NULL`, []any{schema, table}
}

// CountRows counts FROM ONLY the table: not its INHERITS children's rows.
func (Engine) CountRows(table string) string { return "SELECT count(*) FROM ONLY " + table }

// NoTable is undefined_table (42P01).
func (Engine) NoTable(err error) bool { return code(err) == "42P01" }

// LockTimedOut is lock_not_available (55P03).
func (Engine) LockTimedOut(err error) bool { return code(err) == "55P03" }

func code(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// HoldersWhileWaiting is true: pg_blocking_pids names the blockers of a
// session while it waits.
func (Engine) HoldersWhileWaiting() bool { return true }

// LockHolders describes the sessions blocking the sessions whose
// application_name is session.
func (Engine) LockHolders(ctx context.Context, db *sql.DB, session string) []string {
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT b.pid, coalesce(b.usename, ''), coalesce(b.application_name, ''), coalesce(b.state, ''),
    coalesce(floor(extract(epoch FROM now() - b.xact_start))::bigint, 0),
    coalesce(left(regexp_replace(b.query, '\s+', ' ', 'g'), 80), '')
FROM pg_stat_activity w
CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS h(pid)
JOIN pg_stat_activity b ON b.pid = h.pid
WHERE w.application_name = $1
ORDER BY b.pid`, session)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var pid, secs int64
		var user, app, state, query string
		if rows.Scan(&pid, &user, &app, &state, &secs, &query) != nil {
			return nil
		}
		d := fmt.Sprintf("pid %d (user %s", pid, user)
		if app != "" {
			d += fmt.Sprintf(", application %q", app)
		}
		d += fmt.Sprintf(", %s, transaction open %ds", state, secs)
		if query != "" {
			d += ", last statement: " + query
		}
		out = append(out, d+")")
	}
	return out
}

// RegistryTable is schema.queuegen_queues, quoted.
func (Engine) RegistryTable(schema string) string {
	return pgxdriver.Identifier{schema, "queuegen_queues"}.Sanitize()
}

// IndexBuilds reads pg_stat_progress_create_index (a CREATE INDEX
// CONCURRENTLY on a big table takes a while).
func (Engine) IndexBuilds(ctx context.Context, db *sql.DB) ([]engine.IndexBuild, error) {
	rows, err := db.QueryContext(ctx, `SELECT i.relname, p.phase, p.blocks_done, p.blocks_total, p.tuples_done, p.tuples_total
FROM pg_stat_progress_create_index p JOIN pg_class i ON i.oid = p.index_relid
WHERE p.datid = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []engine.IndexBuild
	for rows.Next() {
		var b engine.IndexBuild
		if err := rows.Scan(&b.Index, &b.Phase, &b.BlocksDone, &b.BlocksTotal, &b.TuplesDone, &b.TuplesTotal); err != nil {
			return out, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// TransactionalDDL is true: a failed migration is rolled back whole.
func (Engine) TransactionalDDL() bool { return true }
