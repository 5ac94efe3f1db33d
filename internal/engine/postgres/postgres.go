// Package postgres is queuegen's PostgreSQL engine: the column types and
// their Go types under pgx/v5, the queue tables with their partial
// indexes (and INHERITS children), the DDL of migrations, and the query
// templates compiled by sqlc's PostgreSQL engine.
package postgres

import (
	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/gocode"
	"github.com/queuegen/queuegen/internal/spec"
)

// Name is the engine's name in the spec.
const Name = "postgresql"

// DefaultSchema is the schema names are left unqualified in.
const DefaultSchema = "public"

// MaxIdentifier is NAMEDATALEN-1: PostgreSQL truncates longer names.
const MaxIdentifier = 63

func init() { engine.Register(Engine{}) }

// Engine is the PostgreSQL engine. Its zero value is ready to use.
type Engine struct{}

// Name is "postgresql".
func (Engine) Name() string { return Name }

// RotatesFairClaims marks PostgreSQL's fair claim as rotating
// (engine.FairRotator): its walk through the fair index starts after the
// value the accessor's previous claim stopped at and stops once the batch
// is full, having taken up to a quantum of each value (the batch over 32,
// rounded up).
func (Engine) RotatesFairClaims() {}

// Check accepts every valid spec: the spec format was designed on
// PostgreSQL.
func (Engine) Check(*spec.Spec) spec.Errors { return nil }

// Qualify writes schema.name, or name alone in the public schema.
func (Engine) Qualify(schema, name string) string {
	if schema == "" || schema == DefaultSchema {
		return name
	}
	return schema + "." + name
}

// DefaultSchema is "public".
func (Engine) DefaultSchema() string { return DefaultSchema }

// Inheritance is true: PostgreSQL has CREATE TABLE … INHERITS.
func (Engine) Inheritance() bool { return true }

// Goose is goose's "postgres" dialect.
func (Engine) Goose() string { return "postgres" }

// Templates is templates/postgresql.
func (Engine) Templates() string { return Name }

const (
	pgx    gocode.ImportPath = "github.com/jackc/pgx/v5"
	pgtype gocode.ImportPath = "github.com/jackc/pgx/v5/pgtype"
)

// Runtime is the runtime package of the generated code that is specific to
// pgx/v5: it alone of the runtime imports the driver.
const Runtime gocode.ImportPath = "github.com/queuegen/queuegen/queue/queueimpl/pgximpl"

// Driver is pgx/v5.
func (Engine) Driver() engine.Driver {
	return engine.Driver{
		Tx:        gocode.Named(pgx.Ident("Tx")),
		ErrNoRows: pgx.Ident("ErrNoRows"),
		Runtime:   Runtime,
		TxDriver:  Runtime.Ident("TxDriver"),
		// A btree index entry holds at most 2,704 bytes: the unique
		// index's entry of a key over 2,692 bytes fails unless the key
		// compresses, so no longer key is taken whatever its content.
		// locked_by is text with no index: node ids have no limit.
		KeyLimit: engine.Limit{Max: 2692, Unit: "bytes", Column: "PostgreSQL's unique index on unique_key (a btree entry holds at most 2,704 bytes)"},
		// A distributed queue's unique index is on (bucket, unique_key):
		// the smallint and its padding to the text's alignment take 8
		// bytes of the entry (measured on Citus 13: a 2,692-byte key made
		// an entry of 2,712 bytes).
		DistributedKeyLimit: engine.Limit{Max: 2684, Unit: "bytes", Column: "PostgreSQL's unique index on (bucket, unique_key) of a distributed queue (a btree entry holds at most 2,704 bytes)"},
	}
}

// DDL writes PostgreSQL DDL for tables in schema.
func (Engine) DDL(schema string) engine.DDL { return ddl{schema: schema} }
