package queueimpl

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queuegen/queuegen/queue"
)

// PgxBeginner starts pgx transactions: a *pgxpool.Pool or a *pgx.Conn.
type PgxBeginner interface {
	// BeginTx starts a transaction with opts.
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// PgxTx runs f in a transaction of its own on db, committed when f
// succeeds and rolled back otherwise: the accessors' claims and scheduler
// steps that take a lock held until their commit.
func PgxTx[T any](ctx context.Context, db PgxBeginner, f func(pgx.Tx) (T, error)) (T, error) {
	var zero T
	tx, err := db.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return zero, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	v, err := f(tx)
	if err != nil {
		return zero, err
	}
	return v, tx.Commit(ctx)
}

// Pgx is the queue.TxDriver of pgx/v5 over db.
func Pgx(db PgxBeginner) queue.TxDriver[pgx.Tx] { return pgxDriver{db} }

type pgxDriver struct{ db PgxBeginner }

var pgxIsolation = map[queue.Isolation]pgx.TxIsoLevel{
	queue.ReadCommitted:  pgx.ReadCommitted,
	queue.RepeatableRead: pgx.RepeatableRead,
	queue.Serializable:   pgx.Serializable,
}

func (d pgxDriver) Begin(ctx context.Context, iso queue.Isolation) (pgx.Tx, error) {
	return d.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgxIsolation[iso]})
}

func (pgxDriver) Commit(ctx context.Context, tx pgx.Tx) error   { return tx.Commit(ctx) }
func (pgxDriver) Rollback(ctx context.Context, tx pgx.Tx) error { return tx.Rollback(ctx) }

// Savepoint uses pgx's nested transaction, a SAVEPOINT.
func (pgxDriver) Savepoint(ctx context.Context, tx pgx.Tx) (pgx.Tx, func(context.Context) error, func(context.Context) error, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return sp, sp.Commit, sp.Rollback, nil
}

// Retryable reports a serialization failure (40001) or deadlock (40P01).
func (pgxDriver) Retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// FenceArrays are the ids of jobs and, in parallel, their attempts: what
// PostgreSQL's batch statements (CompleteMany, ExtendMany) find rows by and
// fence them with.
func FenceArrays[P any](jobs []*queue.Job[P]) (ids []int64, attempts []int32) {
	ids, attempts = make([]int64, len(jobs)), make([]int32, len(jobs))
	for i, job := range jobs {
		ids[i], attempts[i] = job.ID, job.Attempt
	}
	return ids, attempts
}
