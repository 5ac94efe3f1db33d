// Package migrate applies the goose migrations queuegen emits, with goose
// used as a library: a goose.Provider over the migrations directory and a
// database/sql handle from pgx's stdlib driver. Each spec's migrations keep
// their own history, in a version table of their own, so that several
// specs, and an application's own goose migrations, share one database.
package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// DefaultTable is the version table of a spec that names none.
const DefaultTable = "queuegen_db_version"

// Migrator applies the migrations in one directory to one database.
type Migrator struct {
	db       *sql.DB
	provider *goose.Provider
	schema   string
	table    string
}

// Option configures Open.
type Option func(*options) error

type options struct {
	schema, table string
}

// Schema is the schema the migrations create their tables in (default
// public). The version table is created there too; Open creates the schema
// first if it is missing, since goose writes its table before the first
// migration runs.
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

// Open connects to the database at url and prepares the migrations in dir.
// Close it when done.
func Open(url, dir string, opts ...Option) (*Migrator, error) {
	o := options{schema: "public", table: DefaultTable}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("bad database URL: %w", err)
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("migrations directory: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	table := o.table
	if o.schema != "public" {
		table = o.schema + "." + o.table
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, os.DirFS(dir), goose.WithTableName(table), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("migrations in %s: %w", dir, err)
	}
	return &Migrator{db: db, provider: p, schema: o.schema, table: o.table}, nil
}

// prepare creates the schema (so that goose can create its version table
// in it) and refuses a database whose queues were migrated under another
// version table: goose would otherwise apply every migration again.
func (m *Migrator) prepare(ctx context.Context) error {
	if m.schema != "public" {
		if _, err := m.db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{m.schema}.Sanitize()); err != nil {
			return err
		}
	}
	var registry, versions bool
	err := m.db.QueryRowContext(ctx, `SELECT
    to_regclass(quote_ident($1) || '.queuegen_queues') IS NOT NULL,
    to_regclass(quote_ident($1) || '.' || quote_ident($2)) IS NOT NULL`, m.schema, m.table).Scan(&registry, &versions)
	if err != nil {
		return err
	}
	if registry && !versions {
		return fmt.Errorf("schema %s already holds queuegen's queues, but not their version table %s.%s: they were migrated with another version table (queuegen used goose_db_version before specs had one of their own); name it in the spec, e.g. migrations_table: goose_db_version", m.schema, m.schema, m.table)
	}
	return nil
}

// DB is the database handle, for status queries beside goose's.
func (m *Migrator) DB() *sql.DB { return m.db }

// Up applies every pending migration and reports each to w.
func (m *Migrator) Up(ctx context.Context, w io.Writer) error {
	if err := m.prepare(ctx); err != nil {
		return err
	}
	res, err := m.provider.Up(ctx)
	report(w, res)
	return err
}

// Down rolls back the latest applied migration and reports it to w.
func (m *Migrator) Down(ctx context.Context, w io.Writer) error {
	if err := m.prepare(ctx); err != nil {
		return err
	}
	res, err := m.provider.Down(ctx)
	if res != nil {
		report(w, []*goose.MigrationResult{res})
	}
	return err
}

// Status writes each migration and whether it is applied.
func (m *Migrator) Status(ctx context.Context, w io.Writer) error {
	if err := m.prepare(ctx); err != nil {
		return err
	}
	st, err := m.provider.Status(ctx)
	if err != nil {
		return err
	}
	for _, s := range st {
		applied := "pending"
		if s.State == goose.StateApplied {
			applied = "applied " + s.AppliedAt.Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(w, "%-45s %s\n", s.Source.Path, applied)
	}
	return nil
}

// Version is the database's current migration version.
func (m *Migrator) Version(ctx context.Context) (int64, error) {
	if err := m.prepare(ctx); err != nil {
		return 0, err
	}
	return m.provider.GetDBVersion(ctx)
}

// Close closes the database handle.
func (m *Migrator) Close() error { return m.db.Close() }

func report(w io.Writer, res []*goose.MigrationResult) {
	for _, r := range res {
		if r.Error != nil {
			fmt.Fprintf(w, "FAILED %s: %v\n", r.Source.Path, r.Error)
			continue
		}
		fmt.Fprintf(w, "%-5s %s (%s)\n", r.Direction, r.Source.Path, r.Duration.Round(1e6))
	}
}

// UpTo applies pending migrations up to and including version.
func (m *Migrator) UpTo(ctx context.Context, version int64) error {
	if err := m.prepare(ctx); err != nil {
		return err
	}
	_, err := m.provider.UpTo(ctx, version)
	return err
}
