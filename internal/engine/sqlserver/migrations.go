package sqlserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	mssql "github.com/microsoft/go-mssqldb"
)

// PrepareMigrations refuses a database below compatibility level 130
// (SQL Server 2016), which has no OPENJSON for queuegen's batch
// statements, and creates the schema if it is missing. CREATE SCHEMA must
// be alone in its batch, hence EXEC.
func (Engine) PrepareMigrations(ctx context.Context, db *sql.DB, schema string) error {
	var level int
	if err := db.QueryRowContext(ctx, "SELECT compatibility_level FROM sys.databases WHERE name = DB_NAME()").Scan(&level); err != nil {
		return err
	}
	if level < 130 {
		return fmt.Errorf("the database's compatibility level is %d: queuegen needs 130 (SQL Server 2016) or later, for OPENJSON (ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = 130)", level)
	}
	if schema == DefaultSchema {
		return nil
	}
	_, err := db.ExecContext(ctx, `IF SCHEMA_ID(@p1) IS NULL
BEGIN
    DECLARE @create NVARCHAR(300) = N'CREATE SCHEMA ' + QUOTENAME(@p1);
    EXEC (@create);
END`, schema)
	return err
}

// MigrationTables asks OBJECT_ID. In dbo the names are left unqualified,
// as the migrations and goose leave them: they resolve in the login's
// default schema.
func (Engine) MigrationTables(schema, table string) (string, []any) {
	prefix := ""
	if schema != DefaultSchema {
		prefix = "[" + strings.ReplaceAll(schema, "]", "]]") + "]."
	}
	return `SELECT
    CAST(IIF(OBJECT_ID(@p1 + N'queuegen_queues', N'U') IS NULL, 0, 1) AS BIT),
    CAST(IIF(OBJECT_ID(@p1 + QUOTENAME(@p2), N'U') IS NULL, 0, 1) AS BIT)`, []any{prefix, table}
}

// CountRows counts the table's rows (no table inherits another).
func (Engine) CountRows(table string) string { return "SELECT COUNT(*) FROM " + table }

// NoTable is error 208, invalid object name.
func (Engine) NoTable(err error) bool {
	var msErr mssql.Error
	return errors.As(err, &msErr) && msErr.Number == 208
}

// LockTimedOut is false: migrations' lock waits are not bounded on SQL
// Server yet (LockTimeouts).
func (Engine) LockTimedOut(error) bool { return false }

// HoldersWhileWaiting is false, and LockHolders names none: lock waits
// are not bounded.
func (Engine) HoldersWhileWaiting() bool { return false }

// LockHolders names no session (see HoldersWhileWaiting).
func (Engine) LockHolders(context.Context, *sql.DB, string) []string { return nil }

// RegistryTable is queuegen_queues in dbo (left unqualified: it resolves
// in the login's default schema), [schema].queuegen_queues elsewhere.
func (Engine) RegistryTable(schema string) string {
	if schema == DefaultSchema {
		return "queuegen_queues"
	}
	return "[" + strings.ReplaceAll(schema, "]", "]]") + "].queuegen_queues"
}

// TransactionalDDL is true: SQL Server's DDL is transactional.
func (Engine) TransactionalDDL() bool { return true }
