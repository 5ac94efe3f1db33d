package ops

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/queuegen/queuegen/internal/dburl"
	msengine "github.com/queuegen/queuegen/internal/engine/sqlserver"
)

// msBackend is the operations on SQL Server, through database/sql and
// go-mssqldb, on the queues of one schema of the connection's database
// (dbo unless the spec names another). Its SQL is in sqlserver_sql.go.
//
// The queue tables are those of the generated SQL Server migrations:
// state a VARCHAR, errors and failures JSON arrays in NVARCHAR(MAX), times
// DATETIME2(6) in UTC. A transaction-mode worker holds its job by the
// claim's row lock until its transaction ends; a read at READ COMMITTED
// would wait for it, so no read here does: they pass over locked rows
// (READPAST), and find the held jobs as msHeld says.
type msBackend struct {
	db     *sql.DB
	schema string
	sql    msSQL
}

func init() {
	backends[msengine.Name] = func(_ context.Context, db dburl.DB, schema string) (backend, error) {
		if schema == "" {
			schema = msengine.DefaultSchema
		}
		if !plainName.MatchString(schema) {
			return nil, fmt.Errorf("ops: schema %q is not a plain identifier", schema)
		}
		h, err := openSQLServer(db.URL)
		if err != nil {
			return nil, err
		}
		return &msBackend{db: h, schema: schema, sql: msSQL{schema: schema}}, nil
	}
}

// msConnectTimeout is the URL parameter bounding a connection's login,
// set to connectTimeout where the URL sets none: go-mssqldb sets no bound
// of its own on it (only on dialing).
const msConnectTimeout = "connection timeout"

// msAddress is the URL with a connection timeout, unless it has one.
func msAddress(address string) (string, error) {
	u, err := url.Parse(address)
	if err != nil {
		return "", err
	}
	q := u.Query()
	if q.Get(msConnectTimeout) == "" {
		q.Set(msConnectTimeout, strconv.Itoa(int(connectTimeout.Seconds())))
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// openSQLServer opens a pool whose connections each wait at most
// lockTimeout for a lock (SET LOCK_TIMEOUT, as PostgreSQL's lock_timeout):
// on a new connection, and again whenever the pool reuses one (the driver
// resets a reused session, and runs SessionInitSQL after).
func openSQLServer(address string) (*sql.DB, error) {
	withTimeout, err := msAddress(address)
	if err != nil {
		return nil, fmt.Errorf("bad database URL: %v", dburl.Redact(err.Error(), address))
	}
	c, err := mssql.NewConnector(withTimeout)
	if err != nil {
		return nil, fmt.Errorf("bad database URL: %v", dburl.Redact(err.Error(), address))
	}
	init := msSQL{}.lockTimeout(lockTimeout.Milliseconds())
	c.SessionInitSQL = init
	return sql.OpenDB(msConnector{c, init}), nil
}

// msConnector runs init on each new connection.
type msConnector struct {
	*mssql.Connector
	init string
}

func (c msConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := msExec(ctx, conn, c.init); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// msExec runs a statement without arguments on a driver connection.
func msExec(ctx context.Context, conn driver.Conn, stmt string) error {
	if e, ok := conn.(driver.ExecerContext); ok {
		_, err := e.ExecContext(ctx, stmt, nil)
		return err
	}
	s, err := conn.(driver.ConnPrepareContext).PrepareContext(ctx, stmt)
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = s.(driver.StmtExecContext).ExecContext(ctx, nil)
	return err
}

func (m *msBackend) ping(ctx context.Context) error { return m.db.PingContext(ctx) }

func (m *msBackend) product(context.Context) (string, error) { return "SQL Server", nil }

func (m *msBackend) close() { m.db.Close() }

// SQL Server's error numbers.
const (
	msInvalidObject = 208  // Invalid object name
	msNoShowplan    = 262  // SHOWPLAN permission denied
	msNoPermission  = 297  // the user does not have permission (a DMV's)
	msNoViewState   = 300  // VIEW SERVER STATE (or DATABASE STATE) permission denied
	msDeadlock      = 1205 // chosen as the deadlock victim
)

// msDenied reports a DMV the user may not read (it lacks VIEW SERVER
// STATE or VIEW DATABASE STATE).
func msDenied(err error) bool {
	n := msErrno(err)
	return n == msNoPermission || n == msNoViewState
}

func msErrno(err error) int32 {
	var e mssql.Error
	if errors.As(err, &e) {
		return e.Number
	}
	var pe *mssql.Error
	if errors.As(err, &pe) {
		return pe.Number
	}
	return 0
}

// table is q's table, quoted and qualified, once its name is checked to
// be a plain identifier: the registry is a table anyone with access may
// write.
func (m *msBackend) table(q Queue) (string, error) {
	if !plainName.MatchString(q.Table) {
		return "", fmt.Errorf("queue %s: the registry names its table %q, which is not a plain identifier", q.Name, q.Table)
	}
	return m.sql.name(q.Table), nil
}

func (m *msBackend) queues(ctx context.Context) ([]Queue, error) {
	rows, err := m.db.QueryContext(ctx, m.sql.queues())
	if err != nil {
		if msErrno(err) == msInvalidObject {
			return nil, fmt.Errorf("no queue registry in schema %s: apply the migrations first (queuegen migrate up)", m.schema)
		}
		return nil, err
	}
	defer rows.Close()
	var qs []Queue
	for rows.Next() {
		var q Queue
		if err := rows.Scan(&q.Name, &q.Table, &q.Mode, &q.Paused); err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	return qs, rows.Err()
}

// msColumn is a column of a queue table, with its type.
type msColumn struct {
	name, typ string
	json      bool
}

func (m *msBackend) catalog(ctx context.Context, q Queue) ([]msColumn, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	rows, err := m.db.QueryContext(ctx, m.sql.columns(), t)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []msColumn
	for rows.Next() {
		var c msColumn
		if err := rows.Scan(&c.name, &c.typ, &c.json); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("queue %s: no table %s in schema %s", q.Name, q.Table, m.schema)
	}
	return cols, nil
}

func (m *msBackend) columns(ctx context.Context, q Queue) ([]string, error) {
	cols, err := m.catalog(ctx, q)
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return names, err
}

// payloadColumns are q's payload columns, ordered as Job.Payload keys
// them, with the expressions that select them, and whether q's table has
// the failures column.
func (m *msBackend) payloadColumns(ctx context.Context, q Queue) (cols []myColumn, selects []string, failures bool, err error) {
	all, err := m.catalog(ctx, q)
	if err != nil {
		return nil, nil, false, err
	}
	type col struct {
		myColumn
		sel string
	}
	var payload []col
	for _, c := range all {
		failures = failures || c.name == "failures"
		if isBookkeeping(c.name) {
			continue
		}
		kind, sel := msKind(c.name, c.typ, c.json)
		payload = append(payload, col{myColumn{name: c.name, kind: kind}, sel})
	}
	sortPayload(payload, func(c col) string { return c.name })
	for _, c := range payload {
		cols = append(cols, c.myColumn)
		selects = append(selects, c.sel)
	}
	return cols, selects, failures, nil
}

func (m *msBackend) now(ctx context.Context) (t time.Time, err error) {
	err = m.db.QueryRowContext(ctx, m.sql.now()).Scan(&t)
	return t.UTC(), err
}

func (m *msBackend) setPaused(ctx context.Context, q Queue, paused bool) error {
	_, err := m.db.ExecContext(ctx, m.sql.setPaused(), paused, q.Name)
	return err
}

func (m *msBackend) retryable(err error) bool { return msErrno(err) == msDeadlock }

func (m *msBackend) baseStats(context.Context, string, *Stats) error { return ErrNoBaseTable }

// counters: SQL Server's per-index operational counts last only while the
// index's metadata stays cached, so they are no running count to chart.
func (m *msBackend) counters(context.Context) (map[string]Counters, error) { return nil, ErrNoCounters }

func (m *msBackend) periodic(ctx context.Context) ([]Tick, error) {
	rows, err := m.db.QueryContext(ctx, m.sql.periodic())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Tick
	for rows.Next() {
		var t Tick
		if err := rows.Scan(&t.Queue, &t.Name, &t.Last); err != nil {
			return nil, err
		}
		t.Last = t.Last.UTC()
		out = append(out, t)
	}
	return out, rows.Err()
}

// oldestSnapshot finds the session of this database with the oldest open
// transaction, which holds back the log's truncation (and the version
// store, where snapshot isolation is on); none when the user may not
// see other sessions.
func (m *msBackend) oldestSnapshot(ctx context.Context) (Holder, bool, error) {
	var h Holder
	var age float64
	err := m.db.QueryRowContext(ctx, m.sql.oldestSnapshot()).Scan(&h.PID, &h.User, &h.Application, &age, &h.Query)
	if errors.Is(err, sql.ErrNoRows) || msDenied(err) {
		// Without VIEW SERVER STATE the sessions are not visible: no
		// warning, rather than a failed command.
		return h, false, nil
	}
	h.Age = time.Duration(age * float64(time.Second))
	return h, err == nil, err
}

func (m *msBackend) nodes(ctx context.Context) ([]Node, error) {
	rows, err := m.db.QueryContext(ctx, m.sql.nodes())
	if err != nil {
		if msErrno(err) == msInvalidObject {
			return nil, ErrNoNodesTable
		}
		return nil, err
	}
	defer rows.Close()
	var out []Node
	for rows.Next() {
		var n Node
		var ms int32
		if err := rows.Scan(&n.Node, &n.Queue, &n.Concurrency, &n.Running, &n.Host, &n.PID, &n.StartedAt, &n.HeartbeatAt, &ms); err != nil {
			return nil, err
		}
		n.StartedAt, n.HeartbeatAt = n.StartedAt.UTC(), n.HeartbeatAt.UTC()
		n.Every = time.Duration(ms) * time.Millisecond
		out = append(out, n)
	}
	return out, rows.Err()
}

func (m *msBackend) leasesByNode(ctx context.Context, q Queue) (map[string]int64, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	rows, err := m.db.QueryContext(ctx, m.sql.leasesByNode(t))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var node string
		var n int64
		if err := rows.Scan(&node, &n); err != nil {
			return nil, err
		}
		out[node] = n
	}
	return out, rows.Err()
}

func (m *msBackend) leasesOf(ctx context.Context, q Queue, nodes []string, limit int) ([]Lease, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	rows, err := m.db.QueryContext(ctx, m.sql.leasesOf(t), limit, jsonArray(nodes))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Lease
	for rows.Next() {
		l := Lease{Queue: q.Name}
		if err := rows.Scan(&l.ID, &l.Node, &l.Attempt, &l.LockedUntil); err != nil {
			return nil, err
		}
		l.LockedUntil = l.LockedUntil.UTC()
		out = append(out, l)
	}
	return out, rows.Err()
}

// jsonArray is vs as the JSON array OPENJSON reads (never null: an empty
// list is []).
func jsonArray[T any](vs []T) string {
	if len(vs) == 0 {
		return "[]"
	}
	doc, _ := json.Marshal(vs)
	return string(doc)
}

// isBookkeeping reports a column that is no payload column.
func isBookkeeping(name string) bool {
	return slices.Contains(bookkeeping, name) || name == "unique_active"
}

// sortPayload orders payload columns as PostgreSQL's jsonb orders keys:
// shortest first, then in byte order.
func sortPayload[T any](cols []T, name func(T) string) {
	slices.SortStableFunc(cols, func(a, b T) int {
		return cmp.Or(cmp.Compare(len(name(a)), len(name(b))), strings.Compare(name(a), name(b)))
	})
}
