package queueimpl

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/golang-sql/civil"
	mssql "github.com/microsoft/go-mssqldb"

	"github.com/queuegen/queuegen/queue"
)

// SQLServer is the queue.TxDriver of database/sql with go-mssqldb over db.
// DefaultIsolation is READ COMMITTED, the claim's: its READPAST and
// UPDLOCK hints skip and lock rows under READ COMMITTED (and, with
// READCOMMITTEDLOCK, also where READ_COMMITTED_SNAPSHOT is on).
func SQLServer(db SQLBeginner) queue.TxDriver[*sql.Tx] { return sqlServerDriver{sqlTx{db}} }

type sqlServerDriver struct{ sqlTx }

// Savepoint sets a savepoint in tx with SAVE TRANSACTION; the handler
// writes through tx itself. SQL Server has no RELEASE: a savepoint ends
// with its transaction, so release does nothing.
func (sqlServerDriver) Savepoint(ctx context.Context, tx *sql.Tx) (*sql.Tx, func(context.Context) error, func(context.Context) error, error) {
	if _, err := tx.ExecContext(ctx, "SAVE TRANSACTION queuegen_handler"); err != nil {
		return nil, nil, nil, err
	}
	release := func(context.Context) error { return nil }
	rollback := func(ctx context.Context) error {
		_, err := tx.ExecContext(ctx, "ROLLBACK TRANSACTION queuegen_handler")
		return err
	}
	return tx, release, rollback, nil
}

// CheckIsolation refuses SERIALIZABLE (queue.IsolationChecker): the claim
// reads WITH (READPAST), which SQL Server allows only under READ
// COMMITTED and REPEATABLE READ (error 650), so every claim would fail.
func (sqlServerDriver) CheckIsolation(iso queue.Isolation) error {
	if iso == queue.Serializable {
		return fmt.Errorf("%w: SQL Server claims with the READPAST hint, which it allows only under READ COMMITTED and REPEATABLE READ, so it cannot claim under SERIALIZABLE: use queue.ReadCommitted (the default) or queue.RepeatableRead", queue.ErrIsolation)
	}
	return nil
}

// Begin starts a transaction at iso, refusing what CheckIsolation refuses
// before any statement.
func (d sqlServerDriver) Begin(ctx context.Context, iso queue.Isolation) (*sql.Tx, error) {
	if err := d.CheckIsolation(iso); err != nil {
		return nil, err
	}
	return d.sqlTx.Begin(ctx, iso)
}

// Retryable reports an error that rolled back the whole transaction: a
// deadlock victim (1205) or a snapshot update conflict (3960).
func (sqlServerDriver) Retryable(err error) bool { return sqlServerRolledBack(err) }

// sqlServerRolledBack reports whether err is SQL Server's deadlock (1205)
// or snapshot update conflict (3960), after which the transaction is gone
// and may be run again.
func sqlServerRolledBack(err error) bool {
	var e mssql.Error
	return errors.As(err, &e) && (e.Number == 1205 || e.Number == 3960)
}

// SQLServerInTx runs f in tx, or, when tx is nil, in a transaction of its
// own on db at READ COMMITTED, committed when f returns nil and rolled
// back otherwise, run again (up to three times) when SQL Server picked it
// as a deadlock victim.
func SQLServerInTx(ctx context.Context, db SQLBeginner, tx *sql.Tx, f func(*sql.Tx) error) error {
	return inTxRetrying(ctx, db, tx, f, sqlServerRolledBack)
}

// DateTime2 is t as a DATETIME2 parameter, in UTC. go-mssqldb sends a
// time.Time as DATETIMEOFFSET, and comparing a DATETIME2 column with one
// converts the column, row by row, so that no index on it can be sought.
func DateTime2(t time.Time) civil.DateTime { return civil.DateTimeOf(t.UTC()) }

// NullDateTime2 is DateTime2(*t), or a DATETIME2 NULL when t is nil.
func NullDateTime2(t *time.Time) mssql.NullDateTime {
	if t == nil {
		return mssql.NullDateTime{}
	}
	return mssql.NullDateTime{DateTime: DateTime2(*t), Valid: true}
}

// Date is the date t shows, in its own location, as a DATE parameter.
func Date(t time.Time) civil.Date { return civil.DateOf(t) }

// NullDate is Date(*t), or a DATE NULL when t is nil.
func NullDate(t *time.Time) mssql.NullDate {
	if t == nil {
		return mssql.NullDate{}
	}
	return mssql.NullDate{Date: Date(*t), Valid: true}
}

// JSONText is a JSON document as an NVARCHAR parameter: sent as bytes, it
// would be VARBINARY, which SQL Server would read as UTF-16 text.
func JSONText(doc json.RawMessage) string { return string(doc) }

// NullJSONText is JSONText(*doc), or NULL when doc is nil.
func NullJSONText(doc *json.RawMessage) *string {
	if doc == nil {
		return nil
	}
	s := string(*doc)
	return &s
}

// ScanJSON is the sql.Scanner that reads a JSON document, which
// go-mssqldb returns as NVARCHAR text, into *doc.
func ScanJSON(doc *json.RawMessage) sql.Scanner { return jsonScanner{doc: doc} }

// ScanNullJSON is ScanJSON for a nullable document: NULL is nil.
func ScanNullJSON(doc **json.RawMessage) sql.Scanner { return jsonScanner{null: doc} }

type jsonScanner struct {
	doc  *json.RawMessage
	null **json.RawMessage
}

func (s jsonScanner) Scan(src any) error {
	var text []byte
	switch v := src.(type) {
	case nil:
		if s.null == nil {
			return errors.New("queueimpl: NULL where a JSON document was expected")
		}
		*s.null = nil
		return nil
	case string:
		text = []byte(v)
	case []byte:
		text = append([]byte(nil), v...)
	default:
		return fmt.Errorf("queueimpl: cannot read %T as a JSON document", src)
	}
	if s.null != nil {
		doc := json.RawMessage(text)
		*s.null = &doc
		return nil
	}
	*s.doc = text
	return nil
}

// OpenJSONValue is v as a bulk insert's JSON row carries it, for OPENJSON
// … WITH to read back as the column's type: a time as UTC ISO 8601 text to
// the microsecond (DATETIME2(6)), bytes as 0x-prefixed hex (CONVERT style
// 1), a JSON document as its text (the column holds the text, whatever its
// JSON type). Other values are as encoding/json writes them.
func OpenJSONValue(v any) any {
	switch v := v.(type) {
	case time.Time:
		return v.UTC().Format(openJSONTime)
	case *time.Time:
		if v == nil {
			return nil
		}
		return OpenJSONValue(*v)
	case json.RawMessage:
		if v == nil {
			return nil
		}
		return string(v)
	case *json.RawMessage:
		if v == nil {
			return nil
		}
		return OpenJSONValue(*v)
	case []byte:
		if v == nil {
			return nil
		}
		return "0x" + hex.EncodeToString(v)
	}
	return v
}

const openJSONTime = "2006-01-02T15:04:05.000000"

// OpenJSONDate is a DATE column's value in a bulk insert's JSON row: the
// date a time.Time (or *time.Time) shows, in its own location.
func OpenJSONDate(v any) any {
	switch v := v.(type) {
	case time.Time:
		return v.Format(time.DateOnly)
	case *time.Time:
		if v != nil {
			return OpenJSONDate(*v)
		}
	}
	return nil
}

// fence is one job of a batch statement: its id and attempt, and, for a
// failure, its error and when to retry it.
type fence struct {
	ID      int64   `json:"id"`
	Attempt int32   `json:"attempt"`
	Message *string `json:"message,omitempty"`
	DelayUs *int64  `json:"delay_us,omitempty"`
	RetryAt *string `json:"retry_at,omitempty"`
}

// OpenJSONFences is the JSON array a batch statement reads with OPENJSON:
// each job's id and attempt, which fence it.
func OpenJSONFences[P any](jobs []*queue.Job[P]) (string, error) {
	return OpenJSONBatch(jobs, nil, nil, nil)
}

// OpenJSONBatch is OpenJSONFences with, for a batch failure, each job's
// message (causes) and its retry delay in microseconds (delays) or the UTC
// time to retry it at (ats).
func OpenJSONBatch[P any](jobs []*queue.Job[P], causes []error, delays []time.Duration, ats []time.Time) (string, error) {
	rows := make([]fence, len(jobs))
	for i, job := range jobs {
		rows[i] = fence{ID: job.ID, Attempt: job.Attempt}
		if causes != nil {
			msg := ErrorText(causes[i])
			rows[i].Message = &msg
		}
		switch {
		case ats != nil:
			at := ats[i].UTC().Format(openJSONTime)
			rows[i].RetryAt = &at
		case delays != nil:
			us := delays[i].Microseconds()
			rows[i].DelayUs = &us
		}
	}
	data, err := json.Marshal(rows)
	return string(data), err
}
