package queueimpl

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/queuegen/queuegen/queue"
)

// This file holds what the database/sql engines' runtimes (mysqlimpl,
// mssqlimpl) share: database/sql is the standard library's, so no driver
// comes with it.

// SQLBeginner starts database/sql transactions: a *sql.DB.
type SQLBeginner interface {
	// BeginTx starts a transaction with opts.
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// SQLTx begins, commits and rolls back the database/sql transactions of
// the TxDrivers of database/sql's engines (MySQL, SQL Server), which add
// their savepoints and the errors they retry.
type SQLTx struct{ DB SQLBeginner }

var sqlIsolation = map[queue.Isolation]sql.IsolationLevel{
	queue.DefaultIsolation: sql.LevelReadCommitted,
	queue.ReadCommitted:    sql.LevelReadCommitted,
	queue.RepeatableRead:   sql.LevelRepeatableRead,
	queue.Serializable:     sql.LevelSerializable,
}

// Begin starts a transaction at iso (DefaultIsolation is READ COMMITTED).
func (d SQLTx) Begin(ctx context.Context, iso queue.Isolation) (*sql.Tx, error) {
	return d.DB.BeginTx(ctx, &sql.TxOptions{Isolation: sqlIsolation[iso]})
}

// Commit commits tx.
func (SQLTx) Commit(_ context.Context, tx *sql.Tx) error { return tx.Commit() }

// Rollback rolls tx back.
func (SQLTx) Rollback(_ context.Context, tx *sql.Tx) error { return tx.Rollback() }

// InTxRetrying runs f in tx, or, when tx is nil, in a transaction of its
// own on db at READ COMMITTED, committed when f returns nil and rolled
// back otherwise, and run again (up to three times in all) while it fails
// with an error retry reports (the engine's deadlock victim).
func InTxRetrying(ctx context.Context, db SQLBeginner, tx *sql.Tx, f func(*sql.Tx) error, retry func(error) bool) error {
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
