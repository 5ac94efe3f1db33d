package postgres

import (
	"database/sql"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	pgxdriver "github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/queuegen/queuegen/internal/engine"
)

// Title is "PostgreSQL".
func (Engine) Title() string { return "PostgreSQL" }

// Schemes are postgres:// and postgresql://.
func (Engine) Schemes() []string { return []string{"postgres", "postgresql"} }

// Example is a postgres:// URL.
func (Engine) Example() string { return "postgres://user@host:5432/db for PostgreSQL" }

// DSN takes any connection string no other engine is sure of for libpq's
// key=value form.
func (Engine) DSN(s string) engine.Claim {
	if strings.Contains(s, "://") {
		return engine.Not
	}
	return engine.Fallback
}

// Parse keeps the address as given: pgx reads it when it opens.
func (Engine) Parse(s string, _ *url.URL) (engine.Address, error) {
	return engine.Address{Engine: Name, URL: s}, nil
}

// Open opens a handle with pgx's stdlib driver; the session's lock
// timeout and name are lock_timeout and application_name.
func (Engine) Open(a engine.Address, s engine.Session) (*sql.DB, error) {
	cfg, err := pgxdriver.ParseConfig(a.URL)
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

// LockTimeouts is true: lock_timeout.
func (Engine) LockTimeouts() bool { return true }
