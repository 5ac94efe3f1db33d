// Package mysql is queuegen's MySQL and MariaDB engine: the column types
// and their Go types on database/sql with go-sql-driver/mysql, per-queue
// tables (MySQL has no INHERITS: each carries the bookkeeping and base
// columns itself) whose indexes lead with the state, the DDL of
// migrations, and the query templates compiled by sqlc's MySQL engine.
//
// It targets MySQL 8.0.13 and later and MariaDB 10.8 and later: both have
// FOR UPDATE SKIP LOCKED and NOWAIT, expression defaults, and descending
// index keys (which a priority queue's claim index needs to be read
// without a sort).
package mysql

import (
	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/gocode"
)

// Name is the engine's name in the spec; it serves MariaDB as well.
const Name = "mysql"

// MaxIdentifier is the longest table, column or index name MySQL takes.
const MaxIdentifier = 64

func init() { engine.Register(Engine{}) }

// Engine is the MySQL engine. Its zero value is ready to use.
type Engine struct{}

// Name is "mysql".
func (Engine) Name() string { return Name }

// Qualify writes name alone: MySQL has no schemas inside a database, and
// the engine refuses the spec's schema key.
func (Engine) Qualify(_, name string) string { return name }

// DefaultSchema is "": tables go in the connection's database.
func (Engine) DefaultSchema() string { return "" }

// Inheritance is false: each queue table carries every column itself.
func (Engine) Inheritance() bool { return false }

// Goose is goose's "mysql" dialect.
func (Engine) Goose() string { return "mysql" }

// Templates is templates/mysql.
func (Engine) Templates() string { return Name }

const sqlPkg gocode.ImportPath = "database/sql"

// Runtime is the runtime package of the generated code that is specific to
// go-sql-driver/mysql: it alone of the runtime imports the driver.
const Runtime gocode.ImportPath = "github.com/queuegen/queuegen/queue/queueimpl/mysqlimpl"

// Driver is database/sql with go-sql-driver/mysql.
func (Engine) Driver() engine.Driver {
	return engine.Driver{
		Tx:        gocode.Named(sqlPkg.Ident("Tx")).Ptr(),
		ErrNoRows: sqlPkg.Ident("ErrNoRows"),
		Runtime:   Runtime,
		TxDriver:  Runtime.Ident("TxDriver"),
		// VARCHAR(255) of utf8mb4 counts characters; a longer value fails
		// (strict mode) or is cut to 255, and cut keys collide.
		KeyLimit:  engine.Limit{Max: 255, Unit: "characters", Column: "MySQL's unique_key VARCHAR(255)"},
		NodeLimit: engine.Limit{Max: 255, Unit: "characters", Column: "MySQL's locked_by VARCHAR(255)"},
	}
}

// DDL writes MySQL DDL; MySQL has no schemas, so schema is unused.
func (Engine) DDL(string) engine.DDL { return ddl{} }
