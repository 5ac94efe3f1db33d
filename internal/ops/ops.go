// Package ops holds the operations behind queuegen's stats, jobs, retry,
// cancel, purge, pause and resume commands, on PostgreSQL, MySQL or
// MariaDB, and SQL Server alike: Open connects to a database, and the
// methods of the Conn it returns are the operations, with the same results
// and guarantees on every engine (where an engine cannot give one, the
// method says so).
//
// Queues are found through the registry table, queuegen_queues; their
// tables are named from it, always quoted (pgx.Identifier on PostgreSQL;
// backticks or brackets around a name checked to be a plain identifier on
// MySQL and SQL Server), and
// every value is a bound parameter.
package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/queuegen/queuegen/internal/dburl"
)

// Conn is a connection pool on one database's queues: the operations are
// its methods. It is safe for concurrent use; Close it when done.
type Conn struct {
	engine string
	b      backend
}

// backends open each engine's operations backend, by the engine's name:
// the backend's file (postgres.go, mysql.go, sqlserver.go) registers it from its init
// function. Which engine a database is, and whether it has schemas, comes
// from the engine's package (dburl); nothing here switches on its name.
var backends = map[string]func(ctx context.Context, db dburl.DB, schema string) (backend, error){}

// Serves reports whether the operations commands serve databases of the
// engine called name.
func Serves(name string) bool {
	_, ok := backends[name]
	return ok
}

// Open opens a pool on db. schema is the PostgreSQL or SQL Server schema
// holding the queues (the spec's; empty: on PostgreSQL the connection's
// current schema, the first of its search_path that exists, public by
// default, resolved by Ping or the first operation; dbo on SQL Server);
// MySQL has no
// schemas (the database db names holds the queues), and there schema must
// be empty.
// Open does not connect: Ping does, as does any operation.
func Open(ctx context.Context, db dburl.DB, schema string) (*Conn, error) {
	open, ok := backends[db.Engine]
	if !ok {
		return nil, fmt.Errorf("ops: no engine %q", db.Engine)
	}
	b, err := open(ctx, db, schema)
	if err != nil {
		return nil, err
	}
	return &Conn{engine: db.Engine, b: b}, nil
}

// Engine is the name of the database's engine (one Serves).
func (c *Conn) Engine() string { return c.engine }

// Product names the server's product as its makers do: PostgreSQL,
// MySQL or MariaDB (which Engine calls mysql alike), or SQL Server.
func (c *Conn) Product(ctx context.Context) (string, error) { return c.b.product(ctx) }

// Inheritance reports whether the engine's queue tables can inherit a
// base table (engine.Engine's Inheritance): then stats have a row across
// the base table.
func (c *Conn) Inheritance() bool { return dburl.DB{Engine: c.engine}.Inheritance() }

// Ping connects, or checks the pool's connection.
//
// It gives up after connectTimeout (10s) on a server that does not
// answer.
func (c *Conn) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	return c.b.ping(ctx)
}

// Close closes the pool.
func (c *Conn) Close() { c.b.close() }

// backend is one engine's side of the operations; Conn holds what is the
// same on both.
type backend interface {
	ping(ctx context.Context) error
	// product names the server's product: PostgreSQL, MySQL, MariaDB or
	// SQL Server.
	product(ctx context.Context) (string, error)
	close()
	// queues reads the registry, by name.
	queues(ctx context.Context) ([]Queue, error)
	// columns lists the columns of q's table, in the table's order.
	columns(ctx context.Context, q Queue) ([]string, error)
	// stats fills in s's counts of q.
	stats(ctx context.Context, q Queue, s *Stats) error
	// statsWithin is stats within a time budget; exact is false when it
	// ran out.
	statsWithin(ctx context.Context, q Queue, budget time.Duration, s *Stats) (exact bool, err error)
	// lastHour counts the errors recorded in q's last hour and the jobs
	// that succeeded in it, in its table and its archive, and whether it
	// keeps succeeded jobs, within budget (known is false when it ran
	// out); q's table has the failures column.
	lastHour(ctx context.Context, q Queue, budget time.Duration) (h Hour, known bool, err error)
	// oldestWithin finds the age of q's oldest due job within budget;
	// known is false when it ran out.
	oldestWithin(ctx context.Context, q Queue, budget time.Duration) (age time.Duration, known bool, err error)
	// oldestSnapshot finds the session holding the oldest snapshot.
	oldestSnapshot(ctx context.Context) (Holder, bool, error)
	// rows is the catalog's estimate of the rows of q's table.
	rows(ctx context.Context, q Queue) (int64, error)
	// estimate is the planner's estimate of q's jobs in state (one of
	// GlanceStates).
	estimate(ctx context.Context, q Queue, state string) (int64, error)
	// finished counts q's finished jobs still in its table by the minute
	// they finished, since since, within budget (nil when it ran out).
	finished(ctx context.Context, q Queue, since time.Time, budget time.Duration) ([]Minute, bool, error)
	// counters reads the server's running counts of rows inserted and
	// deleted, by table; nil where the engine keeps none.
	counters(ctx context.Context) (map[string]Counters, error)
	// periodic reads the periodic jobs' last ticks.
	periodic(ctx context.Context) ([]Tick, error)
	// baseStats fills in s's counts across the INHERITS parent base.
	baseStats(ctx context.Context, base string, s *Stats) error
	// jobs lists up to limit jobs of q matching f (checked), newest first,
	// with ids below before when it is > 0.
	jobs(ctx context.Context, q Queue, f Filter, before int64, limit int) ([]Job, error)
	// count counts the jobs of q matching f (checked) that action
	// applies to.
	count(ctx context.Context, q Queue, f Filter, action Action) (int64, error)
	// matching lists, ascending, the ids of the jobs of q matching f
	// (checked) that action applies to.
	matching(ctx context.Context, q Queue, f Filter, action Action) ([]int64, error)
	// now reads the database's clock.
	now(ctx context.Context) (time.Time, error)
	// begin begins one short transaction of Apply on q's table.
	begin(ctx context.Context, q Queue) (batch, error)
	// retryable reports an error that rolled a whole transaction back (a
	// deadlock), after which the transaction may simply run again.
	retryable(err error) bool
	setPaused(ctx context.Context, q Queue, paused bool) error
	// nodes reads the nodes table (ErrNoNodesTable when it is missing).
	nodes(ctx context.Context) ([]Node, error)
	// leasesByNode counts q's leased jobs by node id (lease mode).
	leasesByNode(ctx context.Context, q Queue) (map[string]int64, error)
	// leasesOf lists up to limit of the jobs of q leased to nodes, by id.
	leasesOf(ctx context.Context, q Queue, nodes []string, limit int) ([]Lease, error)
}

// Queue is a registered queue.
type Queue struct {
	Name, Table, Mode string
	Paused            bool
}

// Queues lists the registered queues, by name.
func (c *Conn) Queues(ctx context.Context) ([]Queue, error) { return c.b.queues(ctx) }

// Find returns the registered queue named name.
func (c *Conn) Find(ctx context.Context, name string) (Queue, error) {
	qs, err := c.Queues(ctx)
	if err != nil {
		return Queue{}, err
	}
	var names []string
	for _, q := range qs {
		if q.Name == name {
			return q, nil
		}
		names = append(names, q.Name)
	}
	return Queue{}, fmt.Errorf("no queue %q (registered: %v)", name, names)
}

// lockTimeout bounds how long an action waits for a lock it cannot skip
// (the registry row, the table's lock): operations never hang silently.
const lockTimeout = 5 * time.Second

// connectTimeout bounds connecting, where the address sets no bound of its
// own: a server that accepts the connection and never answers is an
// error, not a command that hangs.
const connectTimeout = 10 * time.Second
