// Package migrate applies the goose migrations queuegen emits, with goose
// used as a library: a goose.Provider over the migrations directory and a
// database/sql handle (pgx's stdlib driver, go-sql-driver/mysql, or
// go-mssqldb's sqlserver driver with goose's mssql dialect). Each
// spec's migrations keep their own history, in a version table of their
// own, so that several specs, and an application's own goose migrations,
// share one database.
package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/evolve"
	"github.com/queuegen/queuegen/internal/spec"
)

// DefaultTable is the version table of a spec that names none.
const DefaultTable = "queuegen_db_version"

// Migrator applies the migrations in one directory to one database.
type Migrator struct {
	engine string
	// host is the engine, for what migrate asks the server beyond goose.
	host     engine.MigrationHost
	url      dburl.DB
	db       *sql.DB
	provider *goose.Provider
	// lockedDB and locked are a second handle, and goose over it, whose
	// sessions bound their lock waits (LockTimeout); nil without one.
	lockedDB *sql.DB
	locked   *goose.Provider
	fsys     fs.FS
	dir      string
	schema   string
	// resolvedSchema is the schema the tables are in (see tablesSchema),
	// once asked.
	resolvedSchema string
	table          string
	name           string // the locked sessions' application_name
	opts           options
	prepared       bool
	// Notify, when set, is told of each lock wait given up on and tried
	// again.
	Notify func(string)
}

// Option configures Open.
type Option func(*options) error

type options struct {
	schema, table  string
	connectTimeout time.Duration
	lockTimeout    time.Duration
	lockTries      int
	backoff        time.Duration
}

// Schema is the PostgreSQL or SQL Server schema the migrations create
// their tables in (default public on PostgreSQL; on SQL Server dbo, which
// public, the spec's default, also means there). The version table is
// created there too; Open creates the schema first if it is missing, since
// goose writes its table before the first migration runs. MySQL has no
// schemas: the tables go in the connection's database, and Schema is
// ignored.
func Schema(name string) Option {
	return func(o *options) error {
		if name == "" {
			return errors.New("migrate: empty schema name")
		}
		o.schema = name
		return nil
	}
}

// Table is the goose version table, in the schema (default
// queuegen_db_version).
func Table(name string) Option {
	return func(o *options) error {
		if name == "" || strings.Contains(name, ".") {
			return fmt.Errorf("migrate: version table %q: want a table name without a schema (see Schema)", name)
		}
		o.table = name
		return nil
	}
}

// ConnectTimeout bounds connecting to the database, where the address
// sets no bound of its own (default 10s; 0 for none).
func ConnectTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return errors.New("migrate: negative connect timeout")
		}
		o.connectTimeout = d
		return nil
	}
}

// LockTimeout bounds each wait of a migration's statements for a lock to d
// (PostgreSQL's lock_timeout; MySQL's lock_wait_timeout and
// innodb_lock_wait_timeout, in whole seconds), so that an ALTER TABLE
// stuck behind a long transaction does not stall, for as long, every push
// and claim queued behind its lock request. A migration that gives up is
// rolled back (on PostgreSQL; MySQL's DDL is not transactional) and tried
// again, tries times in all, with a growing pause between tries; then
// Migrate returns a *LockTimeoutError naming the sessions that held the
// lock. Migrations marked NO TRANSACTION (CREATE INDEX CONCURRENTLY) are
// not bounded: their wait for older transactions to end is a lock wait
// too, and cutting it short would only leave an invalid index. Not on SQL
// Server yet. Default: no bound (the server's).
func LockTimeout(d time.Duration, tries int) Option {
	return func(o *options) error {
		if d < 0 || tries < 1 {
			return fmt.Errorf("migrate: lock timeout %s, %d tries: want a timeout ≥ 0 and at least one try", d, tries)
		}
		o.lockTimeout, o.lockTries = d, tries
		return nil
	}
}

// Open connects to the database at address (a PostgreSQL, MySQL or SQL
// Server URL or DSN, see package dburl) and prepares the migrations in
// dir. Close it when done.
func Open(address, dir string, opts ...Option) (*Migrator, error) {
	o := options{schema: spec.DefaultSchema, table: DefaultTable, connectTimeout: 10 * time.Second, lockTries: 1, backoff: time.Second}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	db, err := dburl.Parse(address)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("migrations directory: %w", err)
	}
	h, err := db.OpenSession(dburl.Session{ConnectTimeout: o.connectTimeout})
	if err != nil {
		return nil, err
	}
	eng, err := engine.Lookup(db.Engine)
	if err != nil {
		h.Close()
		return nil, err
	}
	host, ok := eng.(engine.MigrationHost)
	if !ok {
		h.Close()
		return nil, fmt.Errorf("queuegen migrate does not serve %s databases yet", dburl.EngineTitle(db.Engine))
	}
	// The engine's default schema stands for the spec's default; an
	// engine without schemas inside a database (MySQL) has none.
	dialect, table, defaultSchema := goose.Dialect(eng.Goose()), o.table, eng.DefaultSchema()
	if defaultSchema == "" || o.schema == spec.DefaultSchema {
		o.schema = defaultSchema
	}
	if o.schema != "" && o.schema != defaultSchema {
		table = o.schema + "." + o.table
	}
	fsys := os.DirFS(dir)
	p, err := goose.NewProvider(dialect, h, fsys, goose.WithTableName(table), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("migrations in %s: %w", dir, err)
	}
	m := &Migrator{engine: db.Engine, host: host, url: db, db: h, provider: p, fsys: fsys, dir: dir, schema: o.schema, table: o.table, opts: o}
	if o.lockTimeout > 0 && db.LockTimeouts() {
		m.name = fmt.Sprintf("queuegen migrate %d.%d", os.Getpid(), sessions.Add(1))
		if m.lockedDB, err = db.OpenSession(dburl.Session{ConnectTimeout: o.connectTimeout, LockTimeout: o.lockTimeout, Name: m.name}); err != nil {
			h.Close()
			return nil, err
		}
		if m.locked, err = goose.NewProvider(dialect, m.lockedDB, fsys, goose.WithTableName(table), goose.WithDisableGlobalRegistry(true)); err != nil {
			m.Close()
			return nil, fmt.Errorf("migrations in %s: %w", dir, err)
		}
	}
	return m, nil
}

// sessions numbers the Migrators of this process, for their sessions'
// application_name.
var sessions atomic.Int64

// prepare creates the schema (so that goose can create its version table
// in it) and refuses a database whose queues were migrated under another
// version table: goose would otherwise apply every migration again.
func (m *Migrator) prepare(ctx context.Context) error {
	if m.prepared {
		return nil
	}
	pingCtx, cancel := ctx, func() {}
	if m.opts.connectTimeout > 0 {
		// The driver's bound may cover the dial only (MySQL's): a server
		// that accepts the connection and never answers is bounded here.
		pingCtx, cancel = context.WithTimeout(ctx, m.opts.connectTimeout)
	}
	err := m.db.PingContext(pingCtx)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("cannot connect to the database: no answer within %s", m.opts.connectTimeout)
		}
		return fmt.Errorf("cannot connect to the database: %s", OneLine(err))
	}
	if err := m.host.PrepareMigrations(ctx, m.db, m.schema); err != nil {
		return err
	}
	schema, err := m.tablesSchema(ctx)
	if err != nil {
		return err
	}
	var registry, versions bool
	query, args := m.host.MigrationTables(schema, m.table)
	if err := m.db.QueryRowContext(ctx, query, args...).Scan(&registry, &versions); err != nil {
		return err
	}
	if registry && !versions {
		where := "schema " + schema
		if schema == "" { // an engine without schemas
			where = "the database"
		}
		return fmt.Errorf("%s already holds queuegen's queues, but not their version table %s: they were migrated with another version table (queuegen used goose_db_version before specs had one of their own); name it in the spec, e.g. migrations_table: goose_db_version", where, m.table)
	}
	m.prepared = true
	return nil
}

// currentSchemaHost is a MigrationHost that can say which schema the
// connection creates unqualified tables in (PostgreSQL's current_schema()).
type currentSchemaHost interface {
	CurrentSchema(ctx context.Context, db *sql.DB) (string, error)
}

// tablesSchema is the schema the migrations' tables are in: the spec's when
// it names one; when it names none they and goose's version table are
// created unqualified, in the connection's current schema (public by
// default; the URL's search_path when it sets one, as a test's schema on a
// shared Citus cluster does), which the engine says where it can.
func (m *Migrator) tablesSchema(ctx context.Context) (string, error) {
	if m.resolvedSchema != "" {
		return m.resolvedSchema, nil
	}
	schema := m.schema
	if h, ok := m.host.(currentSchemaHost); ok && schema != "" && schema == m.url.DefaultSchema() {
		current, err := h.CurrentSchema(ctx, m.db)
		if err != nil {
			return "", err
		}
		if current != "" {
			schema = current
		}
	}
	m.resolvedSchema = schema
	return schema, nil
}

// DB is the database handle, for status queries beside goose's.
func (m *Migrator) DB() *sql.DB { return m.db }

// Step is one migration run.
type Step struct {
	// Direction is "up" or "down".
	Direction string        `json:"direction"`
	File      string        `json:"file"`
	Version   int64         `json:"version"`
	Duration  time.Duration `json:"duration_ns"`
}

// Report is what a migration run did.
type Report struct {
	// Applied are the migrations run, in order.
	Applied []Step `json:"applied"`
	// Failed is the migration that failed, if one did; the error is
	// Migrate's.
	Failed *Step `json:"failed,omitempty"`
	// Pending are the migrations still to apply after the run (after a
	// failure: those it did not reach).
	Pending []string `json:"pending,omitempty"`
	// Version is the database's version after the run.
	Version int64 `json:"version"`
}

// Actions are the runs Migrate knows: up, up-to VERSION, down, down-to
// VERSION, redo (the latest down then up again) and reset (every one
// down).
var Actions = []string{"up", "up-to", "down", "down-to", "redo", "reset"}

// Migrate runs action (one of Actions); target is up-to's and down-to's
// version. It reports what ran even when a migration fails. It refuses,
// running nothing, a --manual stub still holding a placeholder in a
// section it would run (an *evolve.UnfilledError).
func (m *Migrator) Migrate(ctx context.Context, action string, target int64) (*Report, error) {
	if !slices.Contains(Actions, action) {
		return nil, fmt.Errorf("unknown action %q: want one of %s", action, strings.Join(Actions, ", "))
	}
	if err := m.prepare(ctx); err != nil {
		return nil, err
	}
	ups, downs, err := m.plan(ctx, action, target)
	if err != nil {
		return nil, err
	}
	for _, src := range downs {
		if err := m.checkFilled(src, "Down"); err != nil {
			return nil, err
		}
	}
	for _, src := range ups {
		if err := m.checkFilled(src, "Up"); err != nil {
			return nil, err
		}
	}
	rep := &Report{}
	err = m.run(ctx, action, target, rep)
	if errors.Is(err, goose.ErrNoNextVersion) {
		err = nil // down with nothing applied: nothing to do
	}
	status, serr := m.provider.Status(ctx)
	if serr == nil {
		for _, s := range status {
			if s.State == goose.StatePending {
				rep.Pending = append(rep.Pending, s.Source.Path)
			}
		}
	}
	rep.Version, _ = m.provider.GetDBVersion(ctx)
	var lockErr *LockTimeoutError
	if errors.As(err, &lockErr) {
		return rep, err
	}
	return rep, clean(err)
}

// run runs action one migration at a time, each through the provider
// whose sessions suit it (see LockTimeout).
func (m *Migrator) run(ctx context.Context, action string, target int64, rep *Report) error {
	switch action {
	case "up", "up-to":
		last := int64(-1)
		for {
			next, err := m.nextPending(ctx)
			if err != nil {
				return err
			}
			if next == nil || action == "up-to" && next.Version > target || next.Version == last {
				return nil
			}
			last = next.Version
			if err := m.step(ctx, rep, next, (*goose.Provider).UpByOne); err != nil {
				return err
			}
		}
	case "down", "redo":
		latest, err := m.latestApplied(ctx)
		if err != nil || latest == nil {
			return err
		}
		if err := m.step(ctx, rep, latest, (*goose.Provider).Down); err != nil || action == "down" {
			return err
		}
		return m.step(ctx, rep, latest, func(p *goose.Provider, ctx context.Context) (*goose.MigrationResult, error) {
			return p.ApplyVersion(ctx, latest.Version, true)
		})
	default: // down-to, reset
		if action == "reset" {
			target = 0
		}
		for {
			latest, err := m.latestApplied(ctx)
			if err != nil || latest == nil || latest.Version <= target {
				return err
			}
			if err := m.step(ctx, rep, latest, (*goose.Provider).Down); err != nil {
				return err
			}
		}
	}
}

// plan lists the migrations action would run up and those it would run
// down, from the database's state now.
func (m *Migrator) plan(ctx context.Context, action string, target int64) (ups, downs []*goose.Source, err error) {
	status, err := m.provider.Status(ctx)
	if err != nil {
		return nil, nil, clean(err)
	}
	var applied []*goose.Source // latest first
	for i := len(status) - 1; i >= 0; i-- {
		if status[i].State == goose.StateApplied {
			applied = append(applied, status[i].Source)
		}
	}
	switch action {
	case "up", "up-to":
		for _, s := range status {
			if s.State == goose.StatePending && (action == "up" || s.Source.Version <= target) {
				ups = append(ups, s.Source)
			}
		}
	case "down", "redo":
		if len(applied) > 0 {
			downs = applied[:1]
			if action == "redo" {
				ups = applied[:1]
			}
		}
	case "down-to", "reset":
		if action == "reset" {
			target = 0
		}
		for _, s := range applied {
			if s.Version > target {
				downs = append(downs, s)
			}
		}
	}
	return ups, downs, nil
}

// nextPending is the migration up applies next: the first pending one
// (goose refuses it if it is older than the latest applied), or nil.
func (m *Migrator) nextPending(ctx context.Context) (*goose.Source, error) {
	status, err := m.provider.Status(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range status {
		if s.State == goose.StatePending {
			return s.Source, nil
		}
	}
	return nil, nil
}

// latestApplied is the migration down rolls back, or nil.
func (m *Migrator) latestApplied(ctx context.Context) (*goose.Source, error) {
	status, err := m.provider.Status(ctx)
	if err != nil {
		return nil, err
	}
	for i := len(status) - 1; i >= 0; i-- {
		if status[i].State == goose.StateApplied {
			return status[i].Source, nil
		}
	}
	return nil, nil
}

// checkFilled refuses a --manual stub still holding a placeholder in
// section.
func (m *Migrator) checkFilled(src *goose.Source, section string) error {
	data, err := fs.ReadFile(m.fsys, src.Path)
	if err != nil {
		return err
	}
	return evolve.CheckFilled(filepath.Join(m.dir, src.Path), data, section)
}

// noTransaction reports whether a migration is marked NO TRANSACTION.
func (m *Migrator) noTransaction(src *goose.Source) bool {
	data, err := fs.ReadFile(m.fsys, src.Path)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.EqualFold(strings.TrimSpace(l), "-- +goose NO TRANSACTION") {
			return true
		}
	}
	return false
}

// step runs one migration, src, with do; a migration that gives up
// waiting for a lock is tried again (see LockTimeout).
func (m *Migrator) step(ctx context.Context, rep *Report, src *goose.Source, do func(*goose.Provider, context.Context) (*goose.MigrationResult, error)) error {
	p, bounded := m.provider, false
	if m.locked != nil && !m.noTransaction(src) {
		p, bounded = m.locked, true
	}
	pause := m.opts.backoff
	for try := 1; ; try++ {
		var w *watcher
		if bounded {
			w = m.watch(ctx)
		}
		res, err := do(p, ctx)
		var holders []string
		if w != nil {
			holders = w.stop()
		}
		var partial *goose.PartialError
		if errors.As(err, &partial) {
			res, err = partial.Failed, partial.Err
		}
		if err == nil && res != nil && res.Error != nil {
			err = res.Error
		}
		if err == nil {
			if res != nil {
				rep.Applied = append(rep.Applied, Step{Direction: res.Direction, File: res.Source.Path, Version: res.Source.Version, Duration: res.Duration})
			}
			return nil
		}
		if res != nil {
			rep.Failed = &Step{Direction: res.Direction, File: res.Source.Path, Version: res.Source.Version, Duration: res.Duration}
		}
		if !bounded || !m.host.LockTimedOut(err) {
			return err
		}
		if !m.host.HoldersWhileWaiting() {
			holders = m.host.LockHolders(ctx, m.db, m.name)
		}
		lerr := &LockTimeoutError{File: src.Path, Tries: try, Timeout: m.opts.lockTimeout, Holders: holders, Engine: m.engine,
			Candidates: !m.host.HoldersWhileWaiting(), Kept: !m.host.TransactionalDDL()}
		if try >= m.opts.lockTries {
			return lerr
		}
		rep.Failed = nil
		if m.Notify != nil {
			m.Notify(fmt.Sprintf("%s: %s; trying again in %s (try %d of %d)", src.Path, lerr.waited(), pause, try+1, m.opts.lockTries))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 10*time.Second)
	}
}

// LockTimeoutError is a migration that gave up waiting for a lock on every
// try.
type LockTimeoutError struct {
	File    string
	Tries   int
	Timeout time.Duration
	// Holders describe the sessions that held the lock (PostgreSQL), or
	// those with a transaction open (MySQL), one of which held it.
	Holders []string
	Engine  string
	// Candidates is true when Holders are the sessions that had a
	// transaction open, one of which held the lock, rather than the lock's
	// holders (MySQL's, which names no metadata lock's holder).
	Candidates bool
	// Kept is true when the statements of the migration before the one
	// that waited stay applied: the engine commits each DDL statement
	// (MySQL, MariaDB).
	Kept bool
}

func (e *LockTimeoutError) waited() string {
	who := "a session that ended before it could be named"
	switch {
	case len(e.Holders) > 0 && e.Candidates:
		who = "one of these sessions with a transaction open: " + strings.Join(e.Holders, "; ")
	case len(e.Holders) > 0:
		who = strings.Join(e.Holders, "; ")
	}
	return fmt.Sprintf("gave up waiting %s for a lock held by %s", e.Timeout, who)
}

// Error says what held the lock and what to do.
func (e *LockTimeoutError) Error() string {
	undone := "it was rolled back"
	if e.Kept {
		undone = dburl.EngineTitle(e.Engine) + " commit each DDL statement: statements of it before the one that waited stay applied"
	}
	tried := "tried once"
	if e.Tries > 1 {
		tried = fmt.Sprintf("tried %d times", e.Tries)
	}
	return fmt.Sprintf("%s (%s: a migration's lock waits are bounded, so that the pushes and claims queued behind them are not stalled; %s): end or wait out that transaction, then migrate again, or wait longer with --lock-timeout and --lock-tries",
		e.waited(), tried, undone)
}

// watcher notes, while a bounded migration runs, the sessions blocking it
// (PostgreSQL: pg_blocking_pids of the sessions named m.name), from a
// connection of the plain handle. After a lock timeout the waiting
// session no longer waits, so they are noted while it does.
type watcher struct {
	cancel func()
	done   chan struct{}
	seen   []string
}

func (m *Migrator) watch(ctx context.Context) *watcher {
	if !m.host.HoldersWhileWaiting() {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if h := m.host.LockHolders(ctx, m.db, m.name); len(h) > 0 {
				w.seen = h
			}
		}
	}()
	return w
}

func (w *watcher) stop() []string {
	w.cancel()
	<-w.done
	return w.seen
}

// clean takes goose's wrapping off an error ("failed to initialize: …",
// "partial migration error …"), leaving the database's message.
func clean(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, prefix := range []string{"failed to initialize: ", "migrate: ", "failed to run SQL migration: ", "failed to apply migration: "} {
		msg = strings.ReplaceAll(msg, prefix, "")
	}
	return errors.New(msg)
}

// Status is one migration and whether it is applied.
type Status struct {
	File      string     `json:"file"`
	Version   int64      `json:"version"`
	Applied   bool       `json:"applied"`
	AppliedAt *time.Time `json:"applied_at,omitempty"`
}

// Status lists every migration and whether it is applied.
func (m *Migrator) Status(ctx context.Context) ([]Status, error) {
	if err := m.prepare(ctx); err != nil {
		return nil, err
	}
	st, err := m.provider.Status(ctx)
	if err != nil {
		return nil, clean(err)
	}
	out := make([]Status, len(st))
	for i, s := range st {
		out[i] = Status{File: s.Source.Path, Version: s.Source.Version, Applied: s.State == goose.StateApplied}
		if out[i].Applied {
			at := s.AppliedAt
			out[i].AppliedAt = &at
		}
	}
	return out, nil
}

// Version is the database's current migration version.
func (m *Migrator) Version(ctx context.Context) (int64, error) {
	if err := m.prepare(ctx); err != nil {
		return 0, err
	}
	v, err := m.provider.GetDBVersion(ctx)
	return v, clean(err)
}

// Close closes the database handles.
func (m *Migrator) Close() error {
	if m.lockedDB != nil {
		m.lockedDB.Close()
	}
	return m.db.Close()
}

// Up applies every pending migration (a Migrate "up" that reports to w,
// for tests and programs).
func (m *Migrator) Up(ctx context.Context, w io.Writer) error {
	rep, err := m.Migrate(ctx, "up", 0)
	report(w, rep)
	return err
}

// Down rolls back the latest applied migration, reporting it to w.
func (m *Migrator) Down(ctx context.Context, w io.Writer) error {
	rep, err := m.Migrate(ctx, "down", 0)
	report(w, rep)
	return err
}

// UpTo applies pending migrations up to and including version.
func (m *Migrator) UpTo(ctx context.Context, version int64) error {
	_, err := m.Migrate(ctx, "up-to", version)
	return err
}

func report(w io.Writer, rep *Report) {
	if rep == nil {
		return
	}
	for _, s := range rep.Applied {
		fmt.Fprintf(w, "%-5s %s (%s)\n", s.Direction, s.File, s.Duration.Round(time.Millisecond))
	}
}

// OneLine is err's message on one line, lines said twice (as a driver
// trying the same address twice says them) said once.
func OneLine(err error) string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return strings.Join(out, " ")
}

// Loss is a table a down migration would drop with rows in it.
type Loss struct {
	// Table is the table as the migration names it.
	Table string `json:"table"`
	// Rows is how many rows it holds now: jobs, in a queue's table.
	Rows int64 `json:"rows"`
	// File is the migration whose Down section drops it.
	File string `json:"file"`
}

// dropTable finds the tables a Down section drops.
var dropTable = regexp.MustCompile(`(?im)^\s*DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?([^\s;(,]+)\s*;`)

// Losses lists the tables that action (a down action: down, down-to,
// redo, reset) would drop while they hold rows, with their row counts:
// queue tables full of jobs. queuegen's own bookkeeping tables (the
// registry, the periodic schedule) are not counted; a parent table is
// counted without its children's rows. It changes nothing.
func (m *Migrator) Losses(ctx context.Context, action string, target int64) ([]Loss, error) {
	if err := m.prepare(ctx); err != nil {
		return nil, err
	}
	_, downs, err := m.plan(ctx, action, target)
	if err != nil {
		return nil, err
	}
	var out []Loss
	for _, src := range downs {
		data, err := fs.ReadFile(m.fsys, src.Path)
		if err != nil {
			return nil, err
		}
		down := string(data)
		if i := regexp.MustCompile(`(?im)^\s*--\s*\+goose\s+down\b`).FindStringIndex(down); i != nil {
			down = down[i[1]:]
		} else {
			continue
		}
		for _, match := range dropTable.FindAllStringSubmatch(down, -1) {
			table := match[1]
			base := strings.Trim(table[strings.LastIndex(table, ".")+1:], "\"`[]")
			if strings.HasPrefix(base, "queuegen_") {
				continue
			}
			n, err := m.countRows(ctx, table)
			if err != nil {
				return nil, fmt.Errorf("counting the rows of %s, which %s drops: %s", table, src.Path, OneLine(err))
			}
			if n > 0 {
				out = append(out, Loss{Table: table, Rows: n, File: src.Path})
			}
		}
	}
	return out, nil
}

// countRows counts a table's own rows; 0 when it does not exist.
func (m *Migrator) countRows(ctx context.Context, table string) (int64, error) {
	var n int64
	err := m.db.QueryRowContext(ctx, m.host.CountRows(table)).Scan(&n)
	if err != nil && m.host.NoTable(err) {
		return 0, nil
	}
	return n, err
}

// Queue is a queue in the registry.
type Queue struct {
	Name, Table, Mode string
	Paused            bool
}

// Queues reads the queue registry in the Migrator's schema, by name; nil
// when there is none yet.
func (m *Migrator) Queues(ctx context.Context) ([]Queue, error) {
	schema, err := m.tablesSchema(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := m.db.QueryContext(ctx, "SELECT name, table_name, mode, paused FROM "+m.host.RegistryTable(schema)+" ORDER BY name")
	if err != nil && m.host.NoTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var queues []Queue
	for rows.Next() {
		var q Queue
		if err := rows.Scan(&q.Name, &q.Table, &q.Mode, &q.Paused); err != nil {
			return nil, err
		}
		queues = append(queues, q)
	}
	return queues, rows.Err()
}

// IndexProgress reports, once a second, the indexes being built while a
// migration runs (a CREATE INDEX CONCURRENTLY on a big table takes a
// while), on a connection of its own, calling report with each build's
// line; on an engine that reports no index builds it does nothing. Call
// stop when the migration is done.
func (m *Migrator) IndexProgress(ctx context.Context, report func(line string)) (stop func()) {
	ib, ok := m.host.(engine.IndexBuilder)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		db, err := m.url.Open()
		if err != nil {
			return
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			builds, err := ib.IndexBuilds(ctx, db)
			if err != nil {
				return
			}
			for _, b := range builds {
				line := fmt.Sprintf("building index %s: %s", b.Index, b.Phase)
				switch {
				case b.BlocksTotal > 0:
					line += fmt.Sprintf(", %d%% of the table's blocks", 100*b.BlocksDone/b.BlocksTotal)
				case b.TuplesTotal > 0:
					line += fmt.Sprintf(", %d%% of its rows", 100*b.TuplesDone/b.TuplesTotal)
				}
				report(line)
			}
		}
	}()
	return func() { cancel(); <-done }
}
