package mysql

import (
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/engine/mysql/myconfig"
)

// Title is "MySQL/MariaDB".
func (Engine) Title() string { return "MySQL/MariaDB" }

// Schemes are mysql:// and mariadb://.
func (Engine) Schemes() []string { return []string{"mysql", "mariadb"} }

// Example is a mysql:// URL.
func (Engine) Example() string {
	return "mysql://user:password@host:3306/db for MySQL and MariaDB"
}

// DSN is sure of go-sql-driver's DSN form, user:password@tcp(host)/db.
func (Engine) DSN(s string) engine.Claim {
	if strings.Contains(s, "@tcp(") || strings.Contains(s, "@unix(") || strings.HasPrefix(s, "tcp(") || strings.HasPrefix(s, "unix(") {
		return engine.Sure
	}
	return engine.Not
}

// Parse reads a mysql:// URL (its query parameters are the driver's DSN
// parameters) or a DSN into the driver's configuration, set up by Config.
// The Address's Config is a *mysql.Config.
func (Engine) Parse(s string, u *url.URL) (engine.Address, error) {
	var cfg *mysql.Config
	if u == nil {
		parsed, err := mysql.ParseDSN(s)
		if err != nil {
			return engine.Address{}, fmt.Errorf("the MySQL DSN does not parse: %v", err)
		}
		cfg = parsed
	} else {
		cfg = mysql.NewConfig()
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
			return engine.Address{}, fmt.Errorf("the MySQL URL names no database: want mysql://user:password@host:3306/database")
		}
		if len(u.Query()) > 0 {
			// The driver reads its parameters from a DSN: format one with them.
			parsed, err := mysql.ParseDSN(cfg.FormatDSN() + "?" + u.RawQuery)
			if err != nil {
				return engine.Address{}, fmt.Errorf("the MySQL URL's parameters: %v", err)
			}
			cfg = parsed
		}
	}
	return engine.Address{Engine: Name, URL: s, Config: Config(cfg)}, nil
}

// Config sets what queuegen's generated MySQL code needs of a connection
// (see package myconfig).
func Config(cfg *mysql.Config) *mysql.Config { return myconfig.Config(cfg) }

// Open opens a handle with go-sql-driver/mysql on the Address's Config;
// the session's connect timeout is the driver's timeout, its lock timeout
// lock_wait_timeout and innodb_lock_wait_timeout in whole seconds.
func (Engine) Open(a engine.Address, s engine.Session) (*sql.DB, error) {
	cfg, ok := a.Config.(*mysql.Config)
	if !ok || cfg == nil {
		return nil, fmt.Errorf("a MySQL address without its driver configuration (parse it with dburl.Parse)")
	}
	cfg = cfg.Clone()
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
}

// LockTimeouts is true: lock_wait_timeout and innodb_lock_wait_timeout.
func (Engine) LockTimeouts() bool { return true }
