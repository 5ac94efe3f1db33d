// Package migrate applies the goose migrations queuegen emits, with goose
// used as a library: a goose.Provider over the migrations directory and a
// database/sql handle (pgx's stdlib driver, go-sql-driver/mysql, or
// go-mssqldb's sqlserver driver with goose's mssql dialect). Each
// spec's migrations keep their own history, in a version table of their
// own, so that several specs, and an application's own goose migrations,
// share one database.
package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"

	"github.com/queuegen/queuegen/internal/dburl"
)

// DefaultTable is the version table of a spec that names none.
const DefaultTable = "queuegen_db_version"

// Migrator applies the migrations in one directory to one database.
type Migrator struct {
	engine   string
	db       *sql.DB
	provider *goose.Provider
	schema   string
	table    string
	prepared bool
}

// Option configures Open.
type Option func(*options) error

type options struct {
	schema, table string
}

// Schema is the PostgreSQL or SQL Server schema the migrations create
// their tables in (default public on PostgreSQL; on SQL Server dbo, which
// public, the spec's default, also means there). The version table is
// created there too; Open creates the schema first if it is missing, since
// goose writes its table before the first migration runs. MySQL has no
// schemas: the tables go in the connection's database, and Schema is
// ignored.
func Schema(name string) Option {
	return func(o *options) error {
		if name == "" {
			return errors.New("migrate: empty schema name")
		}
		o.schema = name
		return nil
	}
}

// Table is the goose version table, in the schema (default
// queuegen_db_version).
func Table(name string) Option {
	return func(o *options) error {
		if name == "" || strings.Contains(name, ".") {
			return fmt.Errorf("migrate: version table %q: want a table name without a schema (see Schema)", name)
		}
		o.table = name
		return nil
	}
}

// Open connects to the database at address (a PostgreSQL, MySQL or SQL
// Server URL or DSN, see package dburl) and prepares the migrations in
// dir. Close it when done.
func Open(address, dir string, opts ...Option) (*Migrator, error) {
	o := options{schema: "public", table: DefaultTable}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	db, err := dburl.Parse(address)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("migrations directory: %w", err)
	}
	h, err := db.Open()
	if err != nil {
		return nil, err
	}
	dialect, table, defaultSchema := goose.DialectPostgres, o.table, "public"
	switch db.Engine {
	case dburl.MySQL:
		dialect, o.schema = goose.DialectMySQL, ""
	case dburl.SQLServer:
		dialect, defaultSchema = goose.DialectMSSQL, sqlServerSchema
		if o.schema == "public" {
			o.schema = sqlServerSchema
		}
	}
	if o.schema != "" && o.schema != defaultSchema {
		table = o.schema + "." + o.table
	}
	p, err := goose.NewProvider(dialect, h, os.DirFS(dir), goose.WithTableName(table), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("migrations in %s: %w", dir, err)
	}
	return &Migrator{engine: db.Engine, db: h, provider: p, schema: o.schema, table: o.table}, nil
}

// sqlServerSchema is SQL Server's default schema.
const sqlServerSchema = "dbo"

// prepare creates the schema (so that goose can create its version table
// in it) and refuses a database whose queues were migrated under another
// version table: goose would otherwise apply every migration again.
func (m *Migrator) prepare(ctx context.Context) error {
	if m.prepared {
		return nil
	}
	if err := m.db.PingContext(ctx); err != nil {
		return fmt.Errorf("cannot connect to the database: %s", OneLine(err))
	}
	var err error
	switch {
	case m.engine == dburl.MySQL:
		err = checkMySQL(ctx, m.db)
	case m.engine == dburl.SQLServer:
		err = m.prepareSQLServer(ctx)
	case m.schema != "public":
		_, err = m.db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{m.schema}.Sanitize())
	}
	if err != nil {
		return err
	}
	var registry, versions bool
	query, args := m.tablesQuery()
	if err := m.db.QueryRowContext(ctx, query, args...).Scan(&registry, &versions); err != nil {
		return err
	}
	if registry && !versions {
		where := "schema " + m.schema
		if m.engine == dburl.MySQL {
			where = "the database"
		}
		return fmt.Errorf("%s already holds queuegen's queues, but not their version table %s: they were migrated with another version table (queuegen used goose_db_version before specs had one of their own); name it in the spec, e.g. migrations_table: goose_db_version", where, m.table)
	}
	m.prepared = true
	return nil
}

// tablesQuery is the query, and its arguments, of whether the registry
// and the version table exist.
func (m *Migrator) tablesQuery() (string, []any) {
	switch m.engine {
	case dburl.MySQL:
		return `SELECT
    EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'queuegen_queues'),
    EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?)`, []any{m.table}
	case dburl.SQLServer:
		// In dbo the names are left unqualified, as the migrations and
		// goose leave them: they resolve in the login's default schema.
		schema := ""
		if m.schema != sqlServerSchema {
			schema = "[" + strings.ReplaceAll(m.schema, "]", "]]") + "]."
		}
		return `SELECT
    CAST(IIF(OBJECT_ID(@p1 + N'queuegen_queues', N'U') IS NULL, 0, 1) AS BIT),
    CAST(IIF(OBJECT_ID(@p1 + QUOTENAME(@p2), N'U') IS NULL, 0, 1) AS BIT)`, []any{schema, m.table}
	}
	return `SELECT
    to_regclass(quote_ident($1) || '.queuegen_queues') IS NOT NULL,
    to_regclass(quote_ident($1) || '.' || quote_ident($2)) IS NOT NULL`, []any{m.schema, m.table}
}

// prepareSQLServer refuses a database below compatibility level 130 (SQL
// Server 2016), which has no OPENJSON for queuegen's batch statements, and
// creates the schema if it is missing. CREATE SCHEMA must be alone in its
// batch, hence EXEC.
func (m *Migrator) prepareSQLServer(ctx context.Context) error {
	var level int
	if err := m.db.QueryRowContext(ctx, "SELECT compatibility_level FROM sys.databases WHERE name = DB_NAME()").Scan(&level); err != nil {
		return err
	}
	if level < 130 {
		return fmt.Errorf("the database's compatibility level is %d: queuegen needs 130 (SQL Server 2016) or later, for OPENJSON (ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = 130)", level)
	}
	if m.schema == sqlServerSchema {
		return nil
	}
	_, err := m.db.ExecContext(ctx, `IF SCHEMA_ID(@p1) IS NULL
BEGIN
    DECLARE @create NVARCHAR(300) = N'CREATE SCHEMA ' + QUOTENAME(@p1);
    EXEC (@create);
END`, m.schema)
	return err
}

// checkMySQL refuses a server too old for the migrations and queries
// queuegen writes: MySQL before 8.0.13 (expression defaults, SKIP LOCKED)
// or MariaDB before 10.8 (descending index keys, which priority queues'
// claims need to read their index without a sort).
func checkMySQL(ctx context.Context, db *sql.DB) error {
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return err
	}
	if msg := mysqlTooOld(version); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// mysqlTooOld says why a server of version (SELECT VERSION()) is too old,
// or "".
func mysqlTooOld(version string) string {
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

// DB is the database handle, for status queries beside goose's.
func (m *Migrator) DB() *sql.DB { return m.db }

// Step is one migration run.
type Step struct {
	// Direction is "up" or "down".
	Direction string        `json:"direction"`
	File      string        `json:"file"`
	Version   int64         `json:"version"`
	Duration  time.Duration `json:"duration_ns"`
}

// Report is what a migration run did.
type Report struct {
	// Applied are the migrations run, in order.
	Applied []Step `json:"applied"`
	// Failed is the migration that failed, if one did; the error is
	// Migrate's.
	Failed *Step `json:"failed,omitempty"`
	// Pending are the migrations still to apply after the run (after a
	// failure: those it did not reach).
	Pending []string `json:"pending,omitempty"`
	// Version is the database's version after the run.
	Version int64 `json:"version"`
}

// Actions are the runs Migrate knows: up, up-to VERSION, down, down-to
// VERSION, redo (the latest down then up again) and reset (every one
// down).
var Actions = []string{"up", "up-to", "down", "down-to", "redo", "reset"}

// Migrate runs action (one of Actions); target is up-to's and down-to's
// version. It reports what ran even when a migration fails.
func (m *Migrator) Migrate(ctx context.Context, action string, target int64) (*Report, error) {
	if err := m.prepare(ctx); err != nil {
		return nil, err
	}
	var res []*goose.MigrationResult
	var err error
	switch action {
	case "up":
		res, err = m.provider.Up(ctx)
	case "up-to":
		res, err = m.provider.UpTo(ctx, target)
	case "down":
		var r *goose.MigrationResult
		if r, err = m.provider.Down(ctx); r != nil {
			res = append(res, r)
		}
	case "down-to":
		res, err = m.provider.DownTo(ctx, target)
	case "reset":
		res, err = m.provider.DownTo(ctx, 0)
	case "redo":
		var down, up *goose.MigrationResult
		if down, err = m.provider.Down(ctx); down != nil {
			res = append(res, down)
		}
		if err == nil {
			if up, err = m.provider.ApplyVersion(ctx, down.Source.Version, true); up != nil {
				res = append(res, up)
			}
		}
	default:
		return nil, fmt.Errorf("unknown action %q: want one of %s", action, strings.Join(Actions, ", "))
	}
	rep := &Report{}
	var partial *goose.PartialError
	if errors.As(err, &partial) {
		res = append(partial.Applied, partial.Failed)
		err = partial.Err
	}
	for _, r := range res {
		st := Step{Direction: r.Direction, File: r.Source.Path, Version: r.Source.Version, Duration: r.Duration}
		if r.Error != nil {
			rep.Failed = &st
			if err == nil {
				err = r.Error
			}
			continue
		}
		rep.Applied = append(rep.Applied, st)
	}
	if errors.Is(err, goose.ErrNoNextVersion) {
		err = nil // down with nothing applied: nothing to do
	}
	status, serr := m.provider.Status(ctx)
	if serr == nil {
		for _, s := range status {
			if s.State == goose.StatePending {
				rep.Pending = append(rep.Pending, s.Source.Path)
			}
		}
	}
	rep.Version, _ = m.provider.GetDBVersion(ctx)
	return rep, clean(err)
}

// clean takes goose's wrapping off an error ("failed to initialize: …",
// "partial migration error …"), leaving the database's message.
func clean(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, prefix := range []string{"failed to initialize: ", "migrate: ", "failed to run SQL migration: ", "failed to apply migration: "} {
		msg = strings.ReplaceAll(msg, prefix, "")
	}
	return errors.New(msg)
}

// Status is one migration and whether it is applied.
type Status struct {
	File      string     `json:"file"`
	Version   int64      `json:"version"`
	Applied   bool       `json:"applied"`
	AppliedAt *time.Time `json:"applied_at,omitempty"`
}

// Status lists every migration and whether it is applied.
func (m *Migrator) Status(ctx context.Context) ([]Status, error) {
	if err := m.prepare(ctx); err != nil {
		return nil, err
	}
	st, err := m.provider.Status(ctx)
	if err != nil {
		return nil, clean(err)
	}
	out := make([]Status, len(st))
	for i, s := range st {
		out[i] = Status{File: s.Source.Path, Version: s.Source.Version, Applied: s.State == goose.StateApplied}
		if out[i].Applied {
			at := s.AppliedAt
			out[i].AppliedAt = &at
		}
	}
	return out, nil
}

// Version is the database's current migration version.
func (m *Migrator) Version(ctx context.Context) (int64, error) {
	if err := m.prepare(ctx); err != nil {
		return 0, err
	}
	v, err := m.provider.GetDBVersion(ctx)
	return v, clean(err)
}

// Close closes the database handle.
func (m *Migrator) Close() error { return m.db.Close() }

// Up applies every pending migration (a Migrate "up" that reports to w,
// for tests and programs).
func (m *Migrator) Up(ctx context.Context, w io.Writer) error {
	rep, err := m.Migrate(ctx, "up", 0)
	report(w, rep)
	return err
}

// Down rolls back the latest applied migration, reporting it to w.
func (m *Migrator) Down(ctx context.Context, w io.Writer) error {
	rep, err := m.Migrate(ctx, "down", 0)
	report(w, rep)
	return err
}

// UpTo applies pending migrations up to and including version.
func (m *Migrator) UpTo(ctx context.Context, version int64) error {
	_, err := m.Migrate(ctx, "up-to", version)
	return err
}

func report(w io.Writer, rep *Report) {
	if rep == nil {
		return
	}
	for _, s := range rep.Applied {
		fmt.Fprintf(w, "%-5s %s (%s)\n", s.Direction, s.File, s.Duration.Round(time.Millisecond))
	}
}

// OneLine is err's message on one line, lines said twice (as a driver
// trying the same address twice says them) said once.
func OneLine(err error) string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return strings.Join(out, " ")
}
