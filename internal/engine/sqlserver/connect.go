package sqlserver

import (
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/msdsn"

	"github.com/queuegen/queuegen/internal/engine"
)

// Title is "SQL Server".
func (Engine) Title() string { return "SQL Server" }

// Schemes is sqlserver://.
func (Engine) Schemes() []string { return []string{"sqlserver"} }

// Example is a sqlserver:// URL.
func (Engine) Example() string {
	return "sqlserver://user:password@host:1433?database=db for SQL Server"
}

// DSN claims no connection string: SQL Server addresses are URLs.
func (Engine) DSN(string) engine.Claim { return engine.Not }

// Parse checks the URL with go-mssqldb's parser.
func (Engine) Parse(s string, _ *url.URL) (engine.Address, error) {
	if _, err := msdsn.Parse(s); err != nil {
		return engine.Address{}, fmt.Errorf("the SQL Server URL does not parse: %v", redact(err.Error(), s))
	}
	return engine.Address{Engine: Name, URL: s}, nil
}

// Open opens a handle with go-mssqldb's "sqlserver" driver (parameters
// written @p1, @p2… or @name, not ?). The session's settings are not
// applied yet: the driver sets a session up only when it reuses a
// connection.
func (Engine) Open(a engine.Address, _ engine.Session) (*sql.DB, error) {
	conn, err := mssql.NewConnector(a.URL)
	if err != nil {
		return nil, fmt.Errorf("bad database URL: %v", redact(err.Error(), a.URL))
	}
	return sql.OpenDB(conn), nil
}

// LockTimeouts is false (see Open).
func (Engine) LockTimeouts() bool { return false }

// redact keeps the URL's password, or its password parameter, out of msg.
func redact(msg, address string) string {
	if u, err := url.Parse(address); err == nil {
		p, _ := u.User.Password()
		for _, p := range []string{p, u.Query().Get("password")} {
			if p != "" {
				msg = strings.ReplaceAll(msg, p, "xxxxx")
			}
		}
	}
	return msg
}
