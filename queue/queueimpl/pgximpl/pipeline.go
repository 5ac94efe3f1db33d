package pgximpl

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Batcher sends pgx batches: a *pgxpool.Pool or a *pgx.Conn.
type Batcher interface {
	// SendBatch sends every queued statement at once.
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Pipeline is a DBTX for sqlc's queries that sends statements as one
// batch, in one round trip: each Exec is queued, and the Query that
// follows sends them and itself together. The server runs a batch as one
// implicit transaction, committed after its last statement, and each
// statement in turn, each with a snapshot taken when it starts (READ
// COMMITTED): a statement that waits for a lock runs to its end before the
// next one takes its snapshot, as in a transaction of separate statements,
// without the round trips of BEGIN, each statement and COMMIT. A queued
// statement's error is the Query's, and the batch is then rolled back.
//
// The Query's rows come back before the commit. The Rows it returns read
// the batch to its end, the commit included, once Next has returned false,
// and Err then reports a failed commit, as sqlc's code reads rows: so a
// claim whose commit failed returns its error, not its jobs.
//
// A Pipeline is for one Query; its QueryRow and CopyFrom fail.
type Pipeline struct {
	db    Batcher
	batch pgx.Batch
	execs int
}

// NewPipeline is a Pipeline that sends its batch on db.
func NewPipeline(db Batcher) *Pipeline { return &Pipeline{db: db} }

// Exec queues sql; its error, if any, is the Query's.
func (p *Pipeline) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	p.batch.Queue(sql, args...)
	p.execs++
	return pgconn.CommandTag{}, nil
}

// Query sends the queued statements and sql in one batch and returns
// sql's rows.
func (p *Pipeline) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	p.batch.Queue(sql, args...)
	br := p.db.SendBatch(ctx, &p.batch)
	for range p.execs {
		if _, err := br.Exec(); err != nil {
			br.Close() //nolint:errcheck // the statement's error is the one to report
			return nil, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		br.Close() //nolint:errcheck
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

var errPipelineRow = errors.New("pgximpl: a Pipeline runs Exec and Query only")

// QueryRow is not part of a Pipeline.
func (p *Pipeline) QueryRow(context.Context, string, ...any) pgx.Row { return errRow{} }

// CopyFrom is not part of a Pipeline.
func (p *Pipeline) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, errPipelineRow
}

type errRow struct{}

func (errRow) Scan(...any) error { return errPipelineRow }

// batchRows are a batch's last rows: once they are read, the batch is
// closed (its commit read), and its error is theirs.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	err    error
	closed bool
}

func (r *batchRows) Next() bool {
	if r.closed {
		return false
	}
	if r.Rows.Next() {
		return true
	}
	r.finish()
	return false
}

func (r *batchRows) finish() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.Rows.Err()
	if err := r.br.Close(); r.err == nil {
		r.err = err
	}
}

func (r *batchRows) Err() error {
	if r.closed {
		return r.err
	}
	return r.Rows.Err()
}

func (r *batchRows) Close() { r.finish() }
