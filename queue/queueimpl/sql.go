package queueimpl

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queuegen/queuegen/queue"
)

// SQLBeginner starts database/sql transactions: a *sql.DB.
type SQLBeginner interface {
	// BeginTx starts a transaction with opts.
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// SQLDB runs statements and starts transactions: a *sql.DB.
type SQLDB interface {
	SQLBeginner
	// ExecContext runs a statement that returns no rows.
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// MySQL is the queue.TxDriver of database/sql with go-sql-driver/mysql
// over db. DefaultIsolation is READ COMMITTED, not MySQL's REPEATABLE
// READ: under REPEATABLE READ a claim's locking read takes gap locks, on
// which concurrent claimers deadlock.
func MySQL(db SQLBeginner) queue.TxDriver[*sql.Tx] { return mysqlDriver{sqlTx{db}} }

type mysqlDriver struct{ sqlTx }

// sqlTx begins, commits and rolls back the database/sql transactions of
// the TxDrivers of database/sql's engines (MySQL, SQL Server), which add
// their savepoints and the errors they retry.
type sqlTx struct{ db SQLBeginner }

var sqlIsolation = map[queue.Isolation]sql.IsolationLevel{
	queue.DefaultIsolation: sql.LevelReadCommitted,
	queue.ReadCommitted:    sql.LevelReadCommitted,
	queue.RepeatableRead:   sql.LevelRepeatableRead,
	queue.Serializable:     sql.LevelSerializable,
}

func (d sqlTx) Begin(ctx context.Context, iso queue.Isolation) (*sql.Tx, error) {
	return d.db.BeginTx(ctx, &sql.TxOptions{Isolation: sqlIsolation[iso]})
}

func (sqlTx) Commit(_ context.Context, tx *sql.Tx) error   { return tx.Commit() }
func (sqlTx) Rollback(_ context.Context, tx *sql.Tx) error { return tx.Rollback() }

// Savepoint sets a SAVEPOINT in tx; the handler writes through tx itself.
func (mysqlDriver) Savepoint(ctx context.Context, tx *sql.Tx) (*sql.Tx, func(context.Context) error, func(context.Context) error, error) {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT queuegen_handler"); err != nil {
		return nil, nil, nil, err
	}
	release := func(ctx context.Context) error {
		_, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT queuegen_handler")
		return err
	}
	rollback := func(ctx context.Context) error {
		_, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT queuegen_handler")
		return err
	}
	return tx, release, rollback, nil
}

// Retryable reports an error that rolled back the whole transaction: a
// deadlock (1213) or a serialization failure (SQLSTATE 40001).
func (mysqlDriver) Retryable(err error) bool { return rolledBack(err) }

func rolledBack(err error) bool {
	var my *mysql.MySQLError
	return errors.As(err, &my) && (my.Number == 1213 || string(my.SQLState[:]) == "40001")
}

// RetryRolledBack runs f, a statement of the accessor's, and when the
// accessor is bound to no transaction (tx is nil) runs it again, up to
// three times in all, while MySQL rolls it back as a deadlock victim: a
// statement of its own transaction that a deadlock rolled back changed
// nothing, and the fenced statements a worker writes (CompleteMany) can
// meet a claim locking rows of the same index pages. Bound to the
// caller's transaction, the deadlock rolled that transaction back: f runs
// once and the error is the caller's to handle.
func RetryRolledBack[T any](tx *sql.Tx, f func() (T, error)) (T, error) {
	v, err := f()
	for i := 0; i < 2 && tx == nil && rolledBack(err); i++ {
		v, err = f()
	}
	return v, err
}

// InTx runs f in tx, or, when tx is nil, in a transaction of its own on db
// at READ COMMITTED, committed when f returns nil and rolled back
// otherwise. A transaction of its own that a deadlock rolled back is run
// again, up to three times: the generated statements lock few rows, in
// index order, but InnoDB may still pick one of two claimers as a victim.
func InTx(ctx context.Context, db SQLBeginner, tx *sql.Tx, f func(*sql.Tx) error) error {
	return inTxRetrying(ctx, db, tx, f, rolledBack)
}

// inTxRetrying runs f in tx, or in a transaction of its own run again (up
// to three times) while it fails with an error retry reports.
func inTxRetrying(ctx context.Context, db SQLBeginner, tx *sql.Tx, f func(*sql.Tx) error, retry func(error) bool) error {
	if tx != nil {
		return f(tx)
	}
	var err error
	for range 3 {
		if err = inTx(ctx, db, f); !retry(err) {
			return err
		}
	}
	return err
}

func inTx(ctx context.Context, db SQLBeginner, f func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// maxPlaceholders is the most placeholders one prepared statement may
// have in MySQL's protocol.
const maxPlaceholders = 65535

// maxRowsPerInsert bounds a bulk insert's statement, whose text grows with
// its rows.
const maxRowsPerInsert = 1000

// InsertRows inserts the rows whose values are args, perRow values each,
// with query, a single-row INSERT … VALUES (…) whose VALUES row (the rest
// of the text after "\nVALUES ") it repeats once per row. A batch too big
// for one statement is split, and the statements run in one transaction
// (tx, or one of its own), so the rows are inserted all or none. It
// returns how many rows it inserted.
func InsertRows(ctx context.Context, db SQLDB, tx *sql.Tx, query string, perRow int, args []any) (int64, error) {
	if len(args) == 0 {
		return 0, nil
	}
	if perRow <= 0 || len(args)%perRow != 0 {
		return 0, fmt.Errorf("queueimpl: %d values is not a whole number of rows of %d", len(args), perRow)
	}
	at := strings.Index(query, "\nVALUES ")
	if at < 0 {
		return 0, errors.New("queueimpl: the bulk insert's query has no VALUES row")
	}
	head, row := query[:at+len("\nVALUES ")], strings.TrimSpace(query[at+len("\nVALUES "):])
	rows := len(args) / perRow
	chunk := min(maxRowsPerInsert, maxPlaceholders/perRow)
	exec := func(ex interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
	}) (int64, error) {
		var total int64
		for start := 0; start < rows; start += chunk {
			n := min(chunk, rows-start)
			var b strings.Builder
			b.Grow(len(head) + n*(len(row)+2))
			b.WriteString(head)
			for i := range n {
				if i > 0 {
					b.WriteString(",\n")
				}
				b.WriteString(row)
			}
			res, err := ex.ExecContext(ctx, b.String(), args[start*perRow:(start+n)*perRow]...)
			if err != nil {
				return total, err
			}
			added, err := res.RowsAffected()
			if err != nil {
				return total, err
			}
			total += added
		}
		return total, nil
	}
	if tx != nil {
		return exec(tx)
	}
	if rows <= chunk {
		return exec(db)
	}
	var total int64
	err := InTx(ctx, db, nil, func(tx *sql.Tx) error {
		var err error
		total, err = exec(tx)
		return err
	})
	if err != nil {
		return 0, err
	}
	return total, nil
}

// Fences are the ids of jobs and their fence list: id:attempt for each,
// comma-separated, for FIND_IN_SET.
func Fences[P any](jobs []*queue.Job[P]) ([]int64, string) {
	ids := make([]int64, len(jobs))
	var b strings.Builder
	for i, job := range jobs {
		ids[i] = job.ID
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(job.ID, 10))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(int64(job.Attempt), 10))
	}
	return ids, b.String()
}

// FailBatch is the JSON object a batch failure sends, keyed by job id:
// each job's message and its retry delay in microseconds (delays), or the
// UTC time to retry it at (ats).
func FailBatch[P any](jobs []*queue.Job[P], causes []error, delays []time.Duration, ats []time.Time) (string, error) {
	batch := make(map[string]map[string]any, len(jobs))
	for i, job := range jobs {
		entry := map[string]any{"message": ErrorText(causes[i])}
		if ats != nil {
			entry["retry_at"] = ats[i].UTC().Format(DateTimeFormat)
		} else {
			entry["delay_us"] = delays[i].Microseconds()
		}
		batch[strconv.FormatInt(job.ID, 10)] = entry
	}
	data, err := json.Marshal(batch)
	return string(data), err
}

// DateTimeFormat is how a DATETIME(6) is written.
const DateTimeFormat = "2006-01-02 15:04:05.000000"

// FailedState is the state a failed attempt leaves a job in: dead once it
// has used its attempts, else available for a retry.
func FailedState(attempt, maxAttempts int32) queue.State {
	if attempt >= maxAttempts {
		return queue.StateDead
	}
	return queue.StateAvailable
}

// JSONErrors reads a job's errors, kept as a JSON array of strings. A
// document that is not one (edited by hand) is returned whole, as one
// error.
func JSONErrors(doc []byte) []string {
	var errs []string
	if err := json.Unmarshal(doc, &errs); err != nil {
		return []string{string(doc)}
	}
	return errs
}

// RunAfter is when a pushed job becomes due, where the caller's options
// fix it: RunAfter, or Now plus Delay. It is the zero time when the
// database's clock decides it, which an INSERT on MySQL does not return.
func RunAfter(o queue.PushOptions) time.Time {
	switch {
	case o.RunAfter != nil:
		return *o.RunAfter
	case o.Now != nil:
		return o.Now.Add(o.Delay)
	}
	return time.Time{}
}

// SQLQuerier runs statements: a *sql.DB, *sql.Conn or *sql.Tx.
type SQLQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// mysqlTimesChecked and mysqlChecked hold the databases (a *sql.DB,
// *sql.Conn, …) CheckMySQL found reading times right, and also counting
// changed rows.
var mysqlTimesChecked, mysqlChecked sync.Map

// mysqlDSN is the DSN setting the generated MySQL code needs, for errors.
const mysqlDSN = "open it with parseTime=true&loc=UTC (and best interpolateParams=true, never clientFoundRows=true) in the DSN, e.g. user:password@tcp(host:3306)/dbname?parseTime=true&loc=UTC&interpolateParams=true"

// CheckMySQL checks, until it has once found them right for db, the
// connection settings the generated MySQL code relies on, and returns an
// error wrapping queue.ErrConnSettings that names the DSN setting to
// change: parseTime=true (without it the driver returns DATETIME columns
// as text, which no time.Time can be scanned from) and loc=UTC (times are
// stored in UTC; another loc would shift every time read and written);
// then, unless registry is "" (reads: Get), no clientFoundRows=true (with
// it an UPDATE that changes nothing reports the rows it matched, and every
// node would push each periodic job's tick), by an UPDATE of queueName's
// row of the queue registry that changes nothing. A failure to run the
// checks (the server is down) is returned as it is, and they run again on
// the next call.
func CheckMySQL(ctx context.Context, db SQLQuerier, registry, queueName string) error {
	if _, ok := mysqlChecked.Load(db); ok {
		return nil
	}
	if _, ok := mysqlTimesChecked.Load(db); !ok {
		var now any
		if err := db.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&now); err != nil {
			return err
		}
		switch t := now.(type) {
		case time.Time:
			if t.Location() != time.UTC {
				return fmt.Errorf("%w: the MySQL connection reads times in location %q, and queuegen stores them in UTC: %s", queue.ErrConnSettings, t.Location(), mysqlDSN)
			}
		default:
			return fmt.Errorf("%w: the MySQL connection reads DATETIME columns as text (%T), so no job's times can be read: %s", queue.ErrConnSettings, now, mysqlDSN)
		}
		mysqlTimesChecked.Store(db, true)
	}
	if registry == "" {
		return nil
	}
	res, err := db.ExecContext(ctx, "UPDATE "+registry+" SET paused = paused WHERE name = ?", queueName)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 0 {
		return fmt.Errorf("%w: the MySQL connection counts the rows an UPDATE matched, not those it changed (clientFoundRows=true), so every node would push each periodic job's tick: %s", queue.ErrConnSettings, mysqlDSN)
	}
	mysqlChecked.Store(db, true)
	return nil
}
