// Package sqlserver is queuegen's Microsoft SQL Server engine: column types
// and their Go types on database/sql with github.com/microsoft/go-mssqldb,
// per-queue tables (SQL Server has no INHERITS) with filtered indexes for
// the claim, the lease and retention, the DDL of migrations in goose's
// mssql dialect, and the query templates.
//
// sqlc has no SQL Server engine, so the Go code of the queries is written
// by queuegen itself (package querycode), in the shape sqlc gives the other
// engines' code.
//
// The claim is the READPAST queue: a CTE selects the first due rows in
// claim order WITH (ROWLOCK, READPAST, UPDLOCK, READCOMMITTEDLOCK) and an
// UPDATE of the CTE marks them taken, returning them with OUTPUT, in one
// atomic statement. It targets SQL Server 2016 and later (OPENJSON,
// JSON_MODIFY, DROP … IF EXISTS) and Azure SQL.
package sqlserver

import (
	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/gocode"
	"github.com/queuegen/queuegen/internal/spec"
)

// Name is the engine's name in the spec.
const Name = "sqlserver"

// MaxIdentifier is the longest name SQL Server takes (sysname).
const MaxIdentifier = 128

func init() { engine.Register(Engine{}) }

// Engine is the SQL Server engine. Its zero value is ready to use, with
// the spec's defaults.
type Engine struct {
	// offlineIndexes builds indexes of tables that hold rows without
	// ONLINE = ON (sqlserver.online_index: false).
	offlineIndexes bool
}

// Configure is the engine with the spec's sqlserver settings.
func (Engine) Configure(s *spec.Spec) engine.Engine {
	return Engine{offlineIndexes: !s.SQLServer.OnlineIndex}
}

// Name is "sqlserver".
func (Engine) Name() string { return Name }

// Qualify writes schema.name, or name alone in dbo.
func (Engine) Qualify(schema, name string) string {
	if schema == "" || schema == DefaultSchema {
		return name
	}
	return schema + "." + name
}

// DefaultSchema is the schema of a spec without one.
const DefaultSchema = "dbo"

// DefaultSchema is dbo.
func (Engine) DefaultSchema() string { return DefaultSchema }

// Inheritance is false: each queue table carries every column itself.
func (Engine) Inheritance() bool { return false }

// Goose is goose's "mssql" dialect.
func (Engine) Goose() string { return "mssql" }

// Templates is templates/sqlserver.
func (Engine) Templates() string { return Name }

const sqlPkg gocode.ImportPath = "database/sql"

// Runtime is the runtime package of the generated code that is specific to
// go-mssqldb: it alone of the runtime imports the driver.
const Runtime gocode.ImportPath = "github.com/queuegen/queuegen/queue/queueimpl/mssqlimpl"

// Driver is database/sql with go-mssqldb.
func (Engine) Driver() engine.Driver {
	return engine.Driver{
		Tx:        gocode.Named(sqlPkg.Ident("Tx")).Ptr(),
		ErrNoRows: sqlPkg.Ident("ErrNoRows"),
		Runtime:   Runtime,
		TxDriver:  Runtime.Ident("TxDriver"),
		// NVARCHAR(255) counts UTF-16 code units (a character beyond the
		// Basic Multilingual Plane takes two).
		KeyLimit:  engine.Limit{Max: 255, Unit: "UTF-16 code units", Column: "SQL Server's unique_key NVARCHAR(255)"},
		NodeLimit: engine.Limit{Max: 255, Unit: "UTF-16 code units", Column: "SQL Server's locked_by NVARCHAR(255)"},
	}
}

// DDL writes SQL Server DDL for tables in schema.
func (e Engine) DDL(schema string) engine.DDL {
	return ddl{schema: schema, offlineIndexes: e.offlineIndexes}
}
