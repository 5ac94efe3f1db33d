// Package dburl reads the database addresses queuegen's commands take
// (--db, $DATABASE_URL) and opens database/sql handles on them, through
// the engines (engine.Connector): each engine says which URL schemes and
// which connection-string form are its, parses them, and opens handles
// with its driver. Today: a PostgreSQL URL or key=value connection
// string, a MySQL URL (mysql://user:password@host:port/database?param=value)
// or go-sql-driver/mysql DSN (user:password@tcp(host:port)/database), or a
// SQL Server URL (sqlserver://user:password@host:1433?database=name).
package dburl

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/queuegen/queuegen/internal/engine"
	_ "github.com/queuegen/queuegen/internal/engine/all"
	myengine "github.com/queuegen/queuegen/internal/engine/mysql"
	"github.com/queuegen/queuegen/internal/engine/postgres"
	"github.com/queuegen/queuegen/internal/engine/sqlserver"
	"github.com/queuegen/queuegen/internal/spec"
)

// The engines' names, as in the spec's engine key, for tests and for the
// code that still asks which engine a database is (see the README's "How
// the code is organised").
const (
	PostgreSQL = postgres.Name
	MySQL      = myengine.Name
	SQLServer  = sqlserver.Name
)

// DB is a parsed database address.
type DB struct {
	// Engine is the name of the engine the address is of (a registered
	// engine.Connector's).
	Engine string
	// URL is the address as given (PostgreSQL's, for pgx; SQL Server's,
	// for go-mssqldb).
	URL string
	// MySQL is a MySQL address's driver configuration, with what the
	// generated code needs set: parseTime (DATETIME as time.Time, in UTC)
	// and interpolateParams (one round trip a statement). Nil for other
	// engines.
	MySQL *mysql.Config
}

// Parse reads s. It names the engine from the URL's scheme (each
// engine's Schemes), or asks each engine whether a connection string
// without one is in its form (a go-sql-driver DSN has "@tcp(" or "@unix("
// in it; anything else is taken for libpq's key=value form).
func Parse(s string) (DB, error) {
	if s == "" {
		return DB{}, errors.New("no database URL")
	}
	connectors := engine.Connectors(spec.DefaultEngine)
	if !strings.Contains(s, "://") || strings.Contains(s, "@tcp(") || strings.Contains(s, "@unix(") {
		var fallback engine.Connector
		for _, c := range connectors {
			switch c.DSN(s) {
			case engine.Sure:
				return parsed(c.Parse(s, nil))
			case engine.Fallback:
				if fallback == nil {
					fallback = c
				}
			}
		}
		if fallback != nil {
			return parsed(fallback.Parse(s, nil))
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return DB{}, fmt.Errorf("the database URL does not parse: %v", Redact(err.Error(), s))
	}
	var examples []string
	for _, c := range connectors {
		if slices.Contains(c.Schemes(), u.Scheme) {
			return parsed(c.Parse(s, u))
		}
		examples = append(examples, c.Example())
	}
	list := examples[len(examples)-1]
	if len(examples) > 1 {
		list = strings.Join(examples[:len(examples)-1], ", ") + " or " + list
	}
	return DB{}, fmt.Errorf("database URLs of scheme %q are not supported: use %s", u.Scheme, list)
}

// parsed is the DB of an engine's Address.
func parsed(a engine.Address, err error) (DB, error) {
	if err != nil {
		return DB{}, err
	}
	db := DB{Engine: a.Engine, URL: a.URL}
	db.MySQL, _ = a.Config.(*mysql.Config)
	return db, nil
}

// address is d as its engine reads it.
func (d DB) address() (engine.Connector, engine.Address, error) {
	e, err := engine.Lookup(d.Engine)
	if err != nil {
		return nil, engine.Address{}, err
	}
	c, ok := e.(engine.Connector)
	if !ok {
		return nil, engine.Address{}, fmt.Errorf("queuegen cannot connect to %s databases", d.Engine)
	}
	a := engine.Address{Engine: d.Engine, URL: d.URL}
	if d.MySQL != nil {
		a.Config = d.MySQL
	}
	return c, a, nil
}

// Config sets what queuegen's generated MySQL code needs of a connection
// (see the MySQL engine's Config).
func Config(cfg *mysql.Config) *mysql.Config { return myengine.Config(cfg) }

// Open opens a database/sql handle on d with its engine's driver: pgx's
// stdlib driver, go-sql-driver/mysql, or go-mssqldb's "sqlserver" driver
// (parameters written @p1, @p2… or @name, not ?).
func (d DB) Open() (*sql.DB, error) { return d.OpenSession(Session{}) }

// Redact keeps a URL's password out of msg: the URL's own, or a
// sqlserver:// URL's password parameter.
func Redact(msg, db string) string {
	if u, err := url.Parse(db); err == nil {
		p, _ := u.User.Password()
		for _, p := range []string{p, u.Query().Get("password")} {
			if p != "" {
				msg = strings.ReplaceAll(msg, p, "xxxxx")
			}
		}
	}
	if cfg, err := mysql.ParseDSN(db); err == nil && cfg.Passwd != "" {
		msg = strings.ReplaceAll(msg, cfg.Passwd, "xxxxx")
	}
	return msg
}

// Session is what a handle's connections are set up with, beyond the
// address (see engine.Session).
type Session = engine.Session

// OpenSession is Open with connections set up as s says.
func (d DB) OpenSession(s Session) (*sql.DB, error) {
	c, a, err := d.address()
	if err != nil {
		return nil, err
	}
	return c.Open(a, s)
}

// LockTimeouts reports whether OpenSession honours Session.LockTimeout
// on d's engine.
func (d DB) LockTimeouts() bool {
	c, _, err := d.address()
	return err == nil && c.LockTimeouts()
}

// Serves refuses a database of another engine than the spec's: the
// spec's SQL (migrations, queries) is its engine's, and the operations
// commands read the tables by it.
func (d DB) Serves(specEngine, specFile string) error {
	if specEngine == "" || specEngine == d.Engine {
		return nil
	}
	return fmt.Errorf("%s is a spec for %s, but --db names a %s database: use a %s database, or the spec of this one (-f). Nothing was changed", specFile, EngineTitle(specEngine), EngineTitle(d.Engine), EngineTitle(specEngine))
}

// EngineTitle is an engine's name as people write it.
func EngineTitle(name string) string { return engine.Title(name) }

// HasSchemas reports whether d's engine keeps tables in schemas inside a
// database (PostgreSQL, SQL Server), where the queues' schema is asked
// for; false for one whose database is the only namespace (MySQL).
func (d DB) HasSchemas() bool {
	e, err := engine.Lookup(d.Engine)
	return err == nil && e.DefaultSchema() != ""
}

// DefaultSchema is the schema d's engine keeps a spec's tables in when
// the spec names none (public, dbo); empty for an engine without schemas.
func (d DB) DefaultSchema() string {
	e, err := engine.Lookup(d.Engine)
	if err != nil {
		return ""
	}
	return e.DefaultSchema()
}

// Inheritance reports whether d's engine's queue tables inherit a base
// table (engine.Engine's Inheritance).
func (d DB) Inheritance() bool {
	e, err := engine.Lookup(d.Engine)
	return err == nil && e.Inheritance()
}
