// Package dashboard serves queuegen's web dashboard as an http.Handler:
// the queues at a glance with a throughput chart, each queue's jobs with
// filters, each job whole, the periodic jobs, and the operations of
// queuegen's CLI (retry, cancel, purge, pause, resume) with the same code
// and guarantees. `queuegen ui` serves it on its own; an application
// mounts it under a path prefix, behind its own authentication:
//
//	h, err := dashboard.New(ctx, os.Getenv("DATABASE_URL"), dashboard.Prefix("/queues"))
//	if err != nil { ... }
//	defer h.Close()
//	mux.Handle("/queues/", requireAdmin(h))
//
// It works on every engine queuegen generates for (PostgreSQL, MySQL and
// MariaDB, SQL Server), reading the queues from the database's registry.
// No page runs a query that reads a whole table: counts are exact when one statement
// counts them within a budget (50 ms by default) and otherwise the query
// planner's estimates, marked as such; job lists page by id.
//
// Every action is a POST carrying a token bound to a cookie (CSRF), and
// cross-origin POSTs are refused; ReadOnly hides and refuses actions. All
// assets are embedded: the dashboard loads nothing from another host.
package dashboard

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/ops"
	"github.com/queuegen/queuegen/internal/spec"
)

// Handler is the dashboard. It is safe for concurrent use; Close it when
// done.
type Handler struct {
	cfg    config
	conn   *ops.Conn
	mux    *http.ServeMux
	pages  *template.Template
	csrf   csrf
	sample *sampler
	guard  *http.CrossOriginProtection
	closed sync.Once
}

// config is what the options set.
type config struct {
	schema   string
	prefix   string
	readOnly bool
	spec     *spec.Spec
	budget   time.Duration
	every    time.Duration
	user     string
	password string
	token    string
	loopback bool
}

// Option configures New.
type Option func(*config) error

// Schema is the schema holding the queues (default: the spec's when
// SpecFile is given, else the engine's: on PostgreSQL the connection's
// current schema, public unless the URL's search_path says otherwise; dbo
// on SQL Server). MySQL has none: there it is an error.
func Schema(name string) Option {
	return func(c *config) error {
		if name == "" {
			return errors.New("dashboard.Schema: empty schema name")
		}
		c.schema = name
		return nil
	}
}

// Prefix is the path the dashboard is mounted under, such as "/queues":
// its links and routes begin with it. The default is the root.
func Prefix(path string) Option {
	return func(c *config) error {
		path = strings.TrimSuffix(path, "/")
		if path != "" && (!strings.HasPrefix(path, "/") || strings.ContainsAny(path, "{}?#")) {
			return fmt.Errorf("dashboard.Prefix(%q): want a path such as /queues", path)
		}
		c.prefix = path
		return nil
	}
}

// ReadOnly hides the actions and refuses them.
func ReadOnly() Option {
	return func(c *config) error { c.readOnly = true; return nil }
}

// SpecFile reads the spec at path, for the periodic jobs' schedules and
// the PostgreSQL schema. Without it the dashboard knows only what the
// database records: the queues and the periodic jobs' last ticks.
func SpecFile(path string) Option {
	return func(c *config) error {
		s, err := spec.Load(path)
		if err != nil {
			return err
		}
		c.spec = s
		return nil
	}
}

// CountBudget bounds the time spent counting one queue's jobs by state
// (default 50ms): past it, the dashboard shows the planner's estimates.
func CountBudget(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("dashboard.CountBudget(%v): want a positive duration", d)
		}
		c.budget = d
		return nil
	}
}

// SampleEvery is how often the dashboard reads PostgreSQL's per-table
// counters of rows inserted and deleted, for the pushed and deleted
// series of its throughput chart (default 10s).
func SampleEvery(d time.Duration) Option {
	return func(c *config) error {
		if d < 100*time.Millisecond {
			return fmt.Errorf("dashboard.SampleEvery(%v): want at least 100ms", d)
		}
		c.every = d
		return nil
	}
}

// MinSecret is the fewest characters a password or token may have.
const MinSecret = 16

// CheckSecret refuses a password or token that is too weak to guard a
// dashboard: fewer than MinSecret characters, or white space only.
// BasicAuth and BearerToken apply it; `queuegen ui` applies it before it
// connects.
func CheckSecret(secret string) error {
	if utf8.RuneCountInString(secret) < MinSecret || strings.TrimSpace(secret) == "" {
		return fmt.Errorf("want a secret of at least %d characters, not all white space", MinSecret)
	}
	return nil
}

// CheckUser refuses a basic-auth user name that cannot log in: empty, or
// holding a colon (basic authentication sends user:password, so a user
// name ends at its first colon).
func CheckUser(user string) error {
	switch {
	case user == "":
		return errors.New("empty user name")
	case strings.Contains(user, ":"):
		return fmt.Errorf("user name %q holds a colon, which basic authentication cannot send in a user name", user)
	}
	return nil
}

// BasicAuth requires HTTP basic authentication with user and password (see
// CheckUser and CheckSecret).
func BasicAuth(user, password string) Option {
	return func(c *config) error {
		if err := CheckUser(user); err != nil {
			return fmt.Errorf("dashboard.BasicAuth: %w", err)
		}
		if err := CheckSecret(password); err != nil {
			return fmt.Errorf("dashboard.BasicAuth: the password: %w", err)
		}
		c.user, c.password = user, password
		return nil
	}
}

// BearerToken requires token (see CheckSecret): as "Authorization: Bearer
// <token>" (the scheme in any case), or, so that a browser can sign in, as
// the password of HTTP basic authentication with any user name.
func BearerToken(token string) Option {
	return func(c *config) error {
		if err := CheckSecret(token); err != nil {
			return fmt.Errorf("dashboard.BearerToken: %w", err)
		}
		c.token = token
		return nil
	}
}

// LoopbackHostsOnly answers only requests addressed to a loopback host
// name (localhost, 127.0.0.1, [::1]) and refuses the others (403). A
// dashboard without authentication listening on loopback needs it: a web
// page can reach it through a name of its own that it points at 127.0.0.1
// (DNS rebinding), and its requests then carry that name, its origin
// checks passing as the dashboard's own.
func LoopbackHostsOnly() Option {
	return func(c *config) error { c.loopback = true; return nil }
}

// New opens the database at address (a postgres:// URL, a mysql:// URL
// or go-sql-driver DSN, or a sqlserver:// URL) and returns its dashboard.
// It connects once to check the address.
func New(ctx context.Context, address string, opts ...Option) (*Handler, error) {
	cfg := config{budget: 50 * time.Millisecond, every: 10 * time.Second}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.user != "" && cfg.token != "" {
		return nil, errors.New("dashboard: BasicAuth and BearerToken both given: choose one")
	}
	db, err := dburl.Parse(address)
	if err != nil {
		return nil, err
	}
	schema := cfg.schema
	if db.HasSchemas() && schema == "" {
		// Unnamed, PostgreSQL's is the connection's current schema (public
		// by default), SQL Server's dbo: see ops.Open.
		if cfg.spec != nil && cfg.spec.Has("schema") {
			schema = cfg.spec.Schema
		}
	}
	conn, err := ops.Open(ctx, db, schema)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %s", dburl.Redact(err.Error(), address))
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("dashboard: cannot connect to the database: %s", dburl.Redact(err.Error(), address))
	}
	key := make([]byte, 32)
	rand.Read(key)
	h := &Handler{cfg: cfg, conn: conn, csrf: csrf{key: key, path: cfg.prefix + "/"}, guard: http.NewCrossOriginProtection()}
	if h.pages, err = parsePages(); err != nil {
		conn.Close()
		return nil, err
	}
	h.sample = newSampler(conn, cfg.every)
	h.routes()
	return h, nil
}

// Close stops the sampler and closes the database pool.
func (h *Handler) Close() {
	h.closed.Do(func() {
		h.sample.stop()
		h.conn.Close()
	})
}

// ServeHTTP serves the dashboard's pages, assets and actions. Every
// response, refusals (401, 403, 404) included, carries the security
// headers.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")
	if h.cfg.loopback && !loopbackHost(r.Host) {
		http.Error(w, "this dashboard has no authentication and answers only to loopback host names: open it as localhost, 127.0.0.1 or [::1]", http.StatusForbidden)
		return
	}
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="queuegen", charset="UTF-8"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// loopbackHost reports whether a request's Host names only this machine:
// localhost or a loopback address, with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// routes registers every route under the prefix.
func (h *Handler) routes() {
	p := h.cfg.prefix
	m := http.NewServeMux()
	assets, _ := fs.Sub(assetFS, "assets")
	m.Handle("GET "+p+"/assets/", http.StripPrefix(p+"/assets/", cacheable(http.FileServerFS(assets))))
	m.HandleFunc("GET "+p+"/{$}", h.overview)
	m.HandleFunc("GET "+p+"/fragments/queues", h.overviewTable)
	m.HandleFunc("GET "+p+"/throughput/{queue}", h.throughput)
	m.HandleFunc("GET "+p+"/periodic", h.periodic)
	m.HandleFunc("GET "+p+"/nodes", h.nodes)
	m.HandleFunc("GET "+p+"/find", h.find)
	m.HandleFunc("GET "+p+"/queues/{queue}", h.jobs)
	m.HandleFunc("GET "+p+"/queues/{queue}/jobs/{id}", h.job)
	m.HandleFunc("GET "+p+"/queues/{queue}/confirm", h.confirm)
	m.Handle("POST "+p+"/queues/{queue}/{action}", h.post(h.queueAction))
	m.Handle("POST "+p+"/queues/{queue}/jobs/{id}/{action}", h.post(h.jobAction))
	if p != "" {
		m.Handle("GET "+p, http.RedirectHandler(p+"/", http.StatusMovedPermanently))
	}
	h.mux = m
}

// post guards an action: refused when read-only, cross-origin, or
// without the CSRF token.
func (h *Handler) post(next http.HandlerFunc) http.Handler {
	return h.guard.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.cfg.readOnly {
			http.Error(w, "the dashboard is read-only", http.StatusForbidden)
			return
		}
		if !h.csrf.valid(r) {
			http.Error(w, "missing or wrong CSRF token: reload the page and try again", http.StatusForbidden)
			return
		}
		next(w, r)
	}))
}

// cacheable lets browsers keep the assets for an hour.
func cacheable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}
