package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// PrepareMigrations refuses a server too old for the migrations and
// queries queuegen writes (TooOld). MySQL has no schemas to create.
func (Engine) PrepareMigrations(ctx context.Context, db *sql.DB, _ string) error {
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return err
	}
	if msg := TooOld(version); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// TooOld says why a server of version (SELECT VERSION()) is too old, or
// "": MySQL before 8.0.13 (expression defaults, SKIP LOCKED) or MariaDB
// before 10.8 (descending index keys, which priority queues' claims need
// to read their index without a sort).
func TooOld(version string) string {
	var major, minor, patch int
	fmt.Sscanf(version, "%d.%d.%d", &major, &minor, &patch)
	if strings.Contains(strings.ToLower(version), "mariadb") {
		if major < 10 || major == 10 && minor < 8 {
			return fmt.Sprintf("MariaDB %s is too old for queuegen: it needs MariaDB 10.8 or later (descending index keys for the claim index)", version)
		}
		return ""
	}
	if major < 8 || major == 8 && minor == 0 && patch < 13 {
		return fmt.Sprintf("MySQL %s is too old for queuegen: it needs MySQL 8.0.13 or later (SKIP LOCKED, expression defaults)", version)
	}
	return ""
}

// MigrationTables asks information_schema about the connection's
// database.
func (Engine) MigrationTables(_, table string) (string, []any) {
	return `SELECT
    EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'queuegen_queues'),
    EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?)`, []any{table}
}

// CountRows counts the table's rows (no table inherits another).
func (Engine) CountRows(table string) string { return "SELECT COUNT(*) FROM " + table }

// NoTable is error 1146, ER_NO_SUCH_TABLE.
func (Engine) NoTable(err error) bool { return number(err) == 1146 }

// LockTimedOut is error 1205, ER_LOCK_WAIT_TIMEOUT.
func (Engine) LockTimedOut(err error) bool { return number(err) == 1205 }

func number(err error) uint16 {
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return myErr.Number
	}
	return 0
}

// HoldersWhileWaiting is false: see LockHolders.
func (Engine) HoldersWhileWaiting() bool { return false }

// LockHolders describes the sessions with a transaction open: MySQL and
// MariaDB name no metadata lock's holder without a plugin
// (performance_schema's metadata_locks, MariaDB's METADATA_LOCK_INFO), but
// a DML transaction holds its tables' metadata locks until it ends.
func (Engine) LockHolders(ctx context.Context, db *sql.DB, _ string) []string {
	rows, err := db.QueryContext(ctx, `SELECT t.trx_mysql_thread_id, COALESCE(p.USER, ''), COALESCE(p.HOST, ''), COALESCE(p.COMMAND, ''),
    TIMESTAMPDIFF(SECOND, t.trx_started, NOW()), COALESCE(LEFT(p.INFO, 80), '')
FROM information_schema.INNODB_TRX t
LEFT JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
WHERE t.trx_mysql_thread_id <> CONNECTION_ID()
ORDER BY t.trx_started`)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, secs int64
		var user, host, command, query string
		if rows.Scan(&id, &user, &host, &command, &secs, &query) != nil {
			return nil
		}
		d := fmt.Sprintf("connection %d (%s@%s, %s, transaction open %ds", id, user, host, command, secs)
		if query != "" {
			d += ", running: " + query
		}
		out = append(out, d+")")
	}
	return out
}

// RegistryTable is queuegen_queues: the database is the schema.
func (Engine) RegistryTable(string) string { return "queuegen_queues" }

// TransactionalDDL is false: MySQL and MariaDB commit each DDL statement.
func (Engine) TransactionalDDL() bool { return false }
