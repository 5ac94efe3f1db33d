// Package migrate applies the goose migrations queuegen emits, with goose
// used as a library: a goose.Provider over the migrations directory and a
// database/sql handle from pgx's stdlib driver.
package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// Migrator applies the migrations in one directory to one database.
type Migrator struct {
	db       *sql.DB
	provider *goose.Provider
}

// Open connects to the database at url and prepares the migrations in dir.
// Close it when done.
func Open(url, dir string) (*Migrator, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("migrate: bad database URL: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	if _, err := os.Stat(dir); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate: migrations directory: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, os.DirFS(dir))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return &Migrator{db: db, provider: p}, nil
}

// DB is the database handle, for status queries beside goose's.
func (m *Migrator) DB() *sql.DB { return m.db }

// Up applies every pending migration and reports each to w.
func (m *Migrator) Up(ctx context.Context, w io.Writer) error {
	res, err := m.provider.Up(ctx)
	report(w, res)
	return err
}

// Down rolls back the latest applied migration and reports it to w.
func (m *Migrator) Down(ctx context.Context, w io.Writer) error {
	res, err := m.provider.Down(ctx)
	if res != nil {
		report(w, []*goose.MigrationResult{res})
	}
	return err
}

// Status writes each migration and whether it is applied.
func (m *Migrator) Status(ctx context.Context, w io.Writer) error {
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
	_, err := m.provider.UpTo(ctx, version)
	return err
}
