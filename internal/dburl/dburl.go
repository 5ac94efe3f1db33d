// Package dburl reads the database addresses queuegen's commands take
// (--db, $DATABASE_URL): a PostgreSQL URL or key=value connection string,
// a MySQL URL (mysql://user:password@host:port/database?param=value) or
// go-sql-driver/mysql DSN (user:password@tcp(host:port)/database), or a
// SQL Server URL (sqlserver://user:password@host:1433?database=name), and
// opens a database/sql handle on them.
package dburl

import (
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/msdsn"
)

// Engine names, as in the spec's engine key.
const (
	PostgreSQL = "postgresql"
	MySQL      = "mysql"
	SQLServer  = "sqlserver"
)

// DB is a parsed database address.
type DB struct {
	// Engine is PostgreSQL, MySQL or SQLServer.
	Engine string
	// URL is the address as given (PostgreSQL's, for pgx; SQL Server's,
	// for go-mssqldb).
	URL string
	// MySQL is a MySQL address's driver configuration, with what the
	// generated code needs set: parseTime (DATETIME as time.Time, in UTC)
	// and interpolateParams (one round trip a statement).
	MySQL *mysql.Config
}

// Parse reads s. It names the engine from the scheme (postgres://,
// postgresql://, mysql://, sqlserver://), or from the form of a connection
// string: a
// go-sql-driver DSN has "@tcp(" or "@unix(" in it, anything else is taken
// for libpq's key=value form.
func Parse(s string) (DB, error) {
	switch {
	case s == "":
		return DB{}, errors.New("no database URL")
	case strings.Contains(s, "@tcp(") || strings.Contains(s, "@unix(") || strings.HasPrefix(s, "tcp(") || strings.HasPrefix(s, "unix("):
		cfg, err := mysql.ParseDSN(s)
		if err != nil {
			return DB{}, fmt.Errorf("the MySQL DSN does not parse: %v", err)
		}
		return DB{Engine: MySQL, URL: s, MySQL: Config(cfg)}, nil
	case !strings.Contains(s, "://"):
		return DB{Engine: PostgreSQL, URL: s}, nil // libpq's key=value form
	}
	u, err := url.Parse(s)
	if err != nil {
		return DB{}, fmt.Errorf("the database URL does not parse: %v", Redact(err.Error(), s))
	}
	switch u.Scheme {
	case "postgres", "postgresql":
		return DB{Engine: PostgreSQL, URL: s}, nil
	case "mysql", "mariadb":
		cfg, err := mysqlConfig(u)
		if err != nil {
			return DB{}, err
		}
		return DB{Engine: MySQL, URL: s, MySQL: cfg}, nil
	case "sqlserver":
		if _, err := msdsn.Parse(s); err != nil {
			return DB{}, fmt.Errorf("the SQL Server URL does not parse: %v", Redact(err.Error(), s))
		}
		return DB{Engine: SQLServer, URL: s}, nil
	}
	return DB{}, fmt.Errorf("database URLs of scheme %q are not supported: use postgres://user@host:5432/db for PostgreSQL, mysql://user:password@host:3306/db for MySQL and MariaDB or sqlserver://user:password@host:1433?database=db for SQL Server", u.Scheme)
}

// mysqlConfig turns a mysql:// URL into the driver's configuration; its
// query parameters are the driver's DSN parameters.
func mysqlConfig(u *url.URL) (*mysql.Config, error) {
	cfg := mysql.NewConfig()
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	if cfg.DBName == "" || strings.Contains(cfg.DBName, "/") {
		return nil, fmt.Errorf("the MySQL URL names no database: want mysql://user:password@host:3306/database")
	}
	if len(u.Query()) > 0 {
		// The driver reads its parameters from a DSN: format one with them.
		dsn := cfg.FormatDSN() + "?" + u.RawQuery
		parsed, err := mysql.ParseDSN(dsn)
		if err != nil {
			return nil, fmt.Errorf("the MySQL URL's parameters: %v", err)
		}
		cfg = parsed
	}
	return Config(cfg), nil
}

// Config sets what queuegen's generated MySQL code needs of a connection:
// DATETIME read as time.Time (parseTime) in UTC (loc), arguments sent
// with the statement (interpolateParams: one round trip, not a prepare and
// an execute), and rows affected counted as changed, not as matched
// (clientFoundRows off: a periodic job's tick is pushed by the one caller
// whose upsert changed the row).
func Config(cfg *mysql.Config) *mysql.Config {
	cfg = cfg.Clone()
	cfg.ClientFoundRows = false
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	return cfg
}

// Open opens a database/sql handle on d: pgx's stdlib driver,
// go-sql-driver/mysql, or go-mssqldb's "sqlserver" driver (parameters
// written @p1, @p2… or @name, not ?).
func (d DB) Open() (*sql.DB, error) {
	switch d.Engine {
	case MySQL:
		conn, err := mysql.NewConnector(d.MySQL)
		if err != nil {
			return nil, err
		}
		return sql.OpenDB(conn), nil
	case SQLServer:
		conn, err := mssql.NewConnector(d.URL)
		if err != nil {
			return nil, fmt.Errorf("bad database URL: %v", Redact(err.Error(), d.URL))
		}
		return sql.OpenDB(conn), nil
	}
	cfg, err := pgx.ParseConfig(d.URL)
	if err != nil {
		return nil, fmt.Errorf("bad database URL: %w", err)
	}
	return stdlib.OpenDB(*cfg), nil
}

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
// address: bounds on connecting and on lock waits, and a name the
// server's session list shows.
type Session struct {
	// ConnectTimeout bounds connecting, where the address sets no bound of
	// its own (PostgreSQL's connect_timeout, MySQL's timeout); 0 leaves
	// the driver's (none). Callers bound the first round trip with a
	// context too: MySQL's timeout covers the dial only.
	ConnectTimeout time.Duration
	// LockTimeout bounds each wait of a statement for a lock: PostgreSQL's
	// lock_timeout, MySQL's lock_wait_timeout (metadata locks, which DDL
	// takes) and innodb_lock_wait_timeout (row locks), in whole seconds
	// there. Not on SQL Server yet: its driver sets a session up only when
	// it reuses a connection. 0 leaves the server's.
	LockTimeout time.Duration
	// Name is PostgreSQL's application_name for the connections.
	Name string
}

// OpenSession is Open with connections set up as s says.
func (d DB) OpenSession(s Session) (*sql.DB, error) {
	switch d.Engine {
	case MySQL:
		cfg := d.MySQL.Clone()
		if cfg.Timeout == 0 {
			cfg.Timeout = s.ConnectTimeout
		}
		if s.LockTimeout > 0 {
			secs := strconv.Itoa(int(max(1, (s.LockTimeout+time.Second-1)/time.Second)))
			if cfg.Params == nil {
				cfg.Params = map[string]string{}
			}
			cfg.Params["lock_wait_timeout"] = secs
			cfg.Params["innodb_lock_wait_timeout"] = secs
		}
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, err
		}
		return sql.OpenDB(conn), nil
	case SQLServer:
		conn, err := mssql.NewConnector(d.URL)
		if err != nil {
			return nil, fmt.Errorf("bad database URL: %v", Redact(err.Error(), d.URL))
		}
		return sql.OpenDB(conn), nil
	}
	cfg, err := pgx.ParseConfig(d.URL)
	if err != nil {
		return nil, fmt.Errorf("bad database URL: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = s.ConnectTimeout
	}
	if s.LockTimeout > 0 {
		cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(s.LockTimeout.Milliseconds(), 10) + "ms"
	}
	if s.Name != "" {
		cfg.RuntimeParams["application_name"] = s.Name
	}
	return stdlib.OpenDB(*cfg), nil
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
func EngineTitle(engine string) string {
	switch engine {
	case PostgreSQL:
		return "PostgreSQL"
	case MySQL:
		return "MySQL/MariaDB"
	case SQLServer:
		return "SQL Server"
	}
	return engine
}
