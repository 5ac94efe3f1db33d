package pgximpl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Archive is a queue's archive table on PostgreSQL (on_success: archive):
// partitioned by range of finished_at, one partition a UTC day, named
// <Table>_pYYYYMMDD, with a default partition <Table>_default for days
// that have none.
type Archive struct {
	// Schema and Table name the archive.
	Schema, Table string
	// Lock is the queue's maintenance lock, as its Purge and Reap take it:
	// of nodes maintaining the queue at once, one does.
	Lock string
	// Retain is how long succeeded jobs are kept: a partition is dropped
	// once its whole day is older.
	Retain time.Duration
}

// partitionDayFormat is the day in a daily partition's name.
const partitionDayFormat = "20060102"

// archiveAhead is how many days after today Maintain makes partitions for,
// so that a node down for a day or two does not leave completions to the
// default partition.
const archiveAhead = 2

// Maintain keeps the archive's partitions, in one transaction under the
// queue's maintenance lock (when another node holds it, it does nothing):
// it makes the partitions of today and the next two days (by the
// database's clock), drops whole the partitions past Retain, and deletes
// up to limit rows past Retain from the default partition. It returns the
// rows removed (a dropped partition's are counted first: a scan of a table
// about to go, once a day). Making and dropping a partition locks the archive for a
// moment, which holds back completions for as long; it waits at most 5 s
// for the lock and otherwise fails, to try again at the next pass.
//
// A day whose rows have already gone to the default partition (before the
// queue's first Purge, say) gets no partition of its own: PostgreSQL
// refuses one that the default partition's rows would belong to. Those
// rows are deleted from the default partition once past Retain.
func (a Archive) Maintain(ctx context.Context, db Beginner, limit int) (int64, error) {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var locked bool
	var now time.Time
	if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)), now()", a.Lock).Scan(&locked, &now); err != nil || !locked {
		return 0, err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '5s'"); err != nil {
		return 0, err
	}
	parent := pgx.Identifier{a.Schema, a.Table}.Sanitize()
	rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
WHERE i.inhparent = $1::regclass`, parent)
	if err != nil {
		return 0, fmt.Errorf("archive %s: listing its partitions: %w", a.Table, err)
	}
	parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("archive %s: listing its partitions: %w", a.Table, err)
	}
	cutoff := now.Add(-a.Retain)
	have := map[string]bool{}
	var removed int64
	for _, name := range parts {
		day, ok := partitionDay(name)
		if !ok {
			continue
		}
		have[day.Format(partitionDayFormat)] = true
		if day.AddDate(0, 0, 1).After(cutoff) {
			continue
		}
		part := pgx.Identifier{a.Schema, name}.Sanitize()
		var n int64
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+part).Scan(&n); err != nil {
			return 0, fmt.Errorf("archive %s: counting partition %s: %w", a.Table, name, err)
		}
		if _, err := tx.Exec(ctx, "DROP TABLE "+part); err != nil {
			return 0, fmt.Errorf("archive %s: dropping partition %s: %w", a.Table, name, err)
		}
		removed += n
	}
	today := now.UTC().Truncate(24 * time.Hour)
	for i := range archiveAhead + 1 {
		day := today.AddDate(0, 0, i)
		if have[day.Format(partitionDayFormat)] {
			continue
		}
		if err := a.createPartition(ctx, tx, parent, day); err != nil {
			return 0, err
		}
	}
	def := pgx.Identifier{a.Schema, a.Table + "_default"}.Sanitize()
	tag, err := tx.Exec(ctx, `WITH doomed AS (
    SELECT id FROM `+def+` WHERE finished_at < $1 LIMIT $2
)
DELETE FROM `+def+` AS job USING doomed WHERE job.id = doomed.id`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("archive %s: deleting from the default partition: %w", a.Table, err)
	}
	removed += tag.RowsAffected()
	return removed, tx.Commit(ctx)
}

// createPartition makes day's partition, in a savepoint: where the default
// partition already holds rows of that day, PostgreSQL refuses it (check
// violation), and the day is left to the default partition.
func (a Archive) createPartition(ctx context.Context, tx pgx.Tx, parent string, day time.Time) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	name := a.Table + "_p" + day.Format(partitionDayFormat)
	_, err = sp.Exec(ctx, fmt.Sprintf("CREATE TABLE %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')",
		pgx.Identifier{a.Schema, name}.Sanitize(), parent, day.Format("2006-01-02 15:04:05Z07:00"), day.AddDate(0, 0, 1).Format("2006-01-02 15:04:05Z07:00")))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23514" {
		return sp.Rollback(ctx)
	}
	if err != nil {
		sp.Rollback(ctx)
		return fmt.Errorf("archive %s: making partition %s: %w", a.Table, name, err)
	}
	return sp.Commit(ctx)
}

// partitionDay reads the day of a daily partition from its name's suffix
// _pYYYYMMDD (the prefix is the archive's name, or a name it had before a
// rename).
func partitionDay(name string) (time.Time, bool) {
	i := strings.LastIndex(name, "_p")
	if i < 0 || len(name)-i != len("_p")+len(partitionDayFormat) {
		return time.Time{}, false
	}
	day, err := time.Parse(partitionDayFormat, name[i+2:])
	return day, err == nil
}
