package engine

import (
	"context"
	"database/sql"
)

// MigrationHost is a Connector whose databases queuegen migrate prepares,
// bounds and reports on (package migrate runs goose with the Engine's
// Goose dialect; this is what else it must ask of the server).
type MigrationHost interface {
	Connector
	// PrepareMigrations refuses a server too old for the engine's
	// migrations and queries, and creates schema when it is not the
	// default and is missing (goose creates its version table there).
	PrepareMigrations(ctx context.Context, db *sql.DB, schema string) error
	// MigrationTables is the query, with its arguments, of two booleans:
	// whether queuegen's registry (queuegen_queues) and the version table
	// called table exist in schema.
	MigrationTables(schema, table string) (string, []any)
	// CountRows is the query counting table's own rows (not those of the
	// tables that inherit it).
	CountRows(table string) string
	// NoTable reports whether err says the table does not exist.
	NoTable(err error) bool
	// LockTimedOut reports whether err is a statement giving up on a lock
	// after Session.LockTimeout.
	LockTimedOut(err error) bool
	// LockHolders describes the sessions that may hold the lock a
	// migration waits for: the ones blocking the sessions named session
	// when HoldersWhileWaiting (asked while they wait), or else, asked
	// after the wait gave up, the sessions with a transaction open, one of
	// which held it.
	LockHolders(ctx context.Context, db *sql.DB, session string) []string
	HoldersWhileWaiting() bool
	// RegistryTable is queuegen's registry table (queuegen_queues) in
	// schema, as a query names it.
	RegistryTable(schema string) string
	// TransactionalDDL reports whether a migration's DDL is rolled back
	// with its transaction when it fails (it is not where each DDL
	// statement commits).
	TransactionalDDL() bool
}

// IndexBuilder is an Engine whose server reports the progress of the
// index builds in a database: migrate up shows it, once a second, while a
// migration builds an index of a big table.
type IndexBuilder interface {
	// IndexBuilds are the indexes being built in db's database now.
	IndexBuilds(ctx context.Context, db *sql.DB) ([]IndexBuild, error)
}

// IndexBuild is one index being built, as far as it got.
type IndexBuild struct {
	// Index is the index's name; Phase what the build is doing.
	Index, Phase string
	// BlocksDone of BlocksTotal of the table's blocks, and TuplesDone of
	// TuplesTotal of its rows, are done (totals of 0 are unknown).
	BlocksDone, BlocksTotal, TuplesDone, TuplesTotal int64
}
