package queue

import (
	"context"
	"errors"
)

// Isolation is the isolation level of the transactions a TxWorker works
// jobs in.
type Isolation int

// The isolation levels. DefaultIsolation leaves the database's own.
const (
	DefaultIsolation Isolation = iota
	ReadCommitted
	RepeatableRead
	Serializable
)

// String names the level as SQL does.
func (i Isolation) String() string {
	switch i {
	case ReadCommitted:
		return "READ COMMITTED"
	case RepeatableRead:
		return "REPEATABLE READ"
	case Serializable:
		return "SERIALIZABLE"
	}
	return "the database's default"
}

// TxDriver begins and ends the transactions of one database driver, whose
// transaction type is Tx (pgx.Tx, *sql.Tx). Generated accessors supply
// one; a TxWorker works each job in a transaction it begins, and periodic
// jobs advance their tick and push in one.
type TxDriver[Tx any] interface {
	// Begin starts a transaction at the isolation level.
	Begin(ctx context.Context, iso Isolation) (Tx, error)
	// Commit commits tx.
	Commit(ctx context.Context, tx Tx) error
	// Rollback rolls tx back. Workers call it after every transaction,
	// committed or not, and ignore its error.
	Rollback(ctx context.Context, tx Tx) error
	// Savepoint starts a savepoint in tx. The handler writes through the
	// Tx it returns; release keeps its writes, rollback undoes them while
	// the rest of tx (the claim) stays.
	Savepoint(ctx context.Context, tx Tx) (sp Tx, release, rollback func(context.Context) error, err error)
	// Retryable reports an error that rolls back the whole transaction
	// and is worth trying again, such as a serialization failure or a
	// deadlock.
	Retryable(err error) bool
}

// IsolationChecker is implemented by a TxDriver whose engine cannot claim
// at some isolation levels. NewTxWorker asks it about the TxIsolation
// option, and a refused level makes the worker's Run return the error at
// once, before any statement.
type IsolationChecker interface {
	// CheckIsolation returns an error wrapping ErrIsolation, saying why,
	// when a claim cannot run at iso; nil otherwise.
	CheckIsolation(iso Isolation) error
}

// ErrIsolation is wrapped by the error a TxWorker's Run returns when the
// TxIsolation option names a level its engine's claim cannot run at (on
// SQL Server, SERIALIZABLE).
var ErrIsolation = errors.New("queue: isolation level not supported by this engine's claim")
