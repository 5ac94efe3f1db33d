package ops

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"

	"github.com/queuegen/queuegen/internal/dburl"
	myengine "github.com/queuegen/queuegen/internal/engine/mysql"
)

// myBackend is the operations on MySQL or MariaDB, through database/sql,
// on the queues of the connection's database (MySQL has no schemas).
//
// The queue tables are those of the generated MySQL migrations: state an
// ENUM, errors a JSON array, times DATETIME(6) in UTC (so the database's
// clock is UTC_TIMESTAMP(6), never NOW()), and, in a queue with unique
// keys, a stored generated column unique_active (the unique key while the
// job is unfinished) under a unique index.
type myBackend struct {
	db       *sql.DB
	database string

	mu      sync.Mutex
	mariadb *bool // whether the server is MariaDB, once known
}

// mySessionParams are set on each of the pool's connections, unless the
// address sets them: the actions never wait on a row (SKIP LOCKED), and
// these bound waiting for anything else, a row lock a statement cannot
// skip or a table's metadata lock, as PostgreSQL's lock_timeout does.
var mySessionParams = map[string]string{
	"innodb_lock_wait_timeout": strconv.Itoa(int(lockTimeout.Seconds())),
	"lock_wait_timeout":        strconv.Itoa(int(lockTimeout.Seconds())),
}

func init() {
	backends[myengine.Name] = func(_ context.Context, db dburl.DB, schema string) (backend, error) {
		if schema != "" {
			return nil, fmt.Errorf("ops: schema %q given for a MySQL database: MySQL has no schemas, the database the address names holds the queues", schema)
		}
		b, err := openMySQL(db)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
}

func openMySQL(db dburl.DB) (*myBackend, error) {
	if db.MySQL == nil {
		return nil, errors.New("ops: a MySQL address without its driver configuration (parse it with dburl.Parse)")
	}
	cfg := dburl.Config(db.MySQL)
	if cfg.Timeout == 0 { // the address's timeout, else this
		cfg.Timeout = connectTimeout
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	for k, v := range mySessionParams {
		if _, ok := cfg.Params[k]; !ok {
			cfg.Params[k] = v
		}
	}
	h, err := dburl.DB{Engine: dburl.MySQL, URL: db.URL, MySQL: cfg}.Open()
	if err != nil {
		return nil, err
	}
	return &myBackend{db: h, database: cfg.DBName}, nil
}

func (m *myBackend) ping(ctx context.Context) error { return m.db.PingContext(ctx) }

func (m *myBackend) product(ctx context.Context) (string, error) {
	maria, err := m.isMariaDB(ctx)
	if maria {
		return "MariaDB", err
	}
	return "MySQL", err
}

func (m *myBackend) close() { m.db.Close() }

// Server error numbers.
const (
	erNoSuchTable = 1146
	erDeadlock    = 1213
)

func myErrno(err error) uint16 {
	var my *mysql.MySQLError
	if errors.As(err, &my) {
		return my.Number
	}
	return 0
}

func (m *myBackend) queues(ctx context.Context) ([]Queue, error) {
	rows, err := m.db.QueryContext(ctx, "SELECT name, table_name, mode, paused FROM queuegen_queues ORDER BY name")
	if err != nil {
		if myErrno(err) == erNoSuchTable {
			return nil, fmt.Errorf("no queue registry in database %s: apply the migrations first (queuegen migrate up)", m.database)
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

// plainName is a name that needs no quoting, which every table name
// queuegen generates is.
var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// table is q's table, quoted, once its name is checked to be a plain
// identifier: the registry is a table anyone with access may write.
func (m *myBackend) table(q Queue) (string, error) {
	if !plainName.MatchString(q.Table) {
		return "", fmt.Errorf("queue %s: the registry names its table %q, which is not a plain identifier", q.Name, q.Table)
	}
	return "`" + q.Table + "`", nil
}

// quoteColumn quotes a column name the catalog gave.
func quoteColumn(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// placeholders is n placeholders, comma-separated.
func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

// anys turns values into arguments.
func anys[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// myWhere renders a checked filter as a predicate with its parameters,
// held being the jobs a transaction in progress holds (see heldIn).
func myWhere(f Filter, held []int64) (string, []any) {
	heldPred, args := "FALSE", []any(nil)
	if len(held) > 0 {
		heldPred, args = "id IN ("+placeholders(len(held))+")", anys(held)
	}
	where := withHeld(predicates[f.State].my, heldPred)
	if !strings.Contains(predicates[f.State].my, "{held}") {
		args = nil
	}
	if f.ID != 0 {
		where, args = "id = ?", []any{f.ID}
	}
	more, margs := f.narrowing(func(int) string { return "?" }, 0, quoteColumn, true)
	return where + more, append(args, margs...)
}

func (m *myBackend) isMariaDB(ctx context.Context) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mariadb == nil {
		var version string
		if err := m.db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
			return false, err
		}
		maria := strings.Contains(strings.ToLower(version), "mariadb")
		m.mariadb = &maria
	}
	return *m.mariadb, nil
}

// querier is a *sql.DB or *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func collectIDs(ctx context.Context, db querier, query string, args ...any) ([]int64, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids := []int64{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
