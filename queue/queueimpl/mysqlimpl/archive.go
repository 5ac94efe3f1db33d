package mysqlimpl

import (
	"context"
	"crypto/sha1"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Archive is a queue's archive table on MySQL and MariaDB (on_success:
// archive): partitioned by RANGE COLUMNS of finished_at, one partition a
// UTC day, named pYYYYMMDD and holding the rows before the next day's
// midnight, then a last partition, pmax (VALUES LESS THAN MAXVALUE), which
// takes the rows of days that have no partition yet.
type Archive struct {
	// Table names the archive, in the connection's database.
	Table string
	// Retain is how long succeeded jobs are kept: a partition is dropped
	// once its whole day is older.
	Retain time.Duration
}

// archiveAhead is how many days after today Maintain makes partitions for,
// so that a node down for a day or two leaves pmax empty, and the next
// split of it costs nothing.
const archiveAhead = 2

// lastPartition is the archive's last partition (mysql.ArchivePartition).
const lastPartition = "pmax"

// Conner is a database handle that lends one of its connections: a
// *sql.DB.
type Conner interface {
	Conn(ctx context.Context) (*sql.Conn, error)
}

// Maintain keeps the archive's partitions: it drops whole the partitions
// past Retain (ALTER TABLE … DROP PARTITION) and makes those of today and
// the next two days (by the database's clock) by splitting pmax (ALTER
// TABLE … REORGANIZE PARTITION). It returns the rows removed, counted
// before each partition is dropped (a scan of a partition about to go,
// once a day); limit is unused, as no rows are deleted one by one.
//
// MySQL's DDL is not transactional and commits any transaction, so it
// runs on a connection of its own, never in the caller's transaction,
// under a named lock (GET_LOCK) of the archive: of nodes maintaining the
// queue at once, one does, the others do nothing. Each ALTER takes the
// archive's metadata lock for a moment, waiting behind a completion's
// open transaction; it waits at most 5 s (lock_wait_timeout) and
// otherwise fails, to try again at the next pass. Splitting pmax copies
// the rows it holds: none, as long as a node maintained the queue in the
// last two days; the rows archived before the first pass (or while no
// node maintained the queue) go to the first new partition, today's,
// and leave with it.
func (a Archive) Maintain(ctx context.Context, db any, limit int) (int64, error) {
	c, ok := db.(Conner)
	if !ok {
		return 0, fmt.Errorf("archive %s: maintaining its partitions takes a connection of its own, from a *sql.DB, not a %T", a.Table, db)
	}
	conn, err := c.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	lock := archiveLock(a.Table)
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", lock).Scan(&got); err != nil || got.Int64 != 1 {
		return 0, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(?)", lock)
	var wait int64
	var now time.Time
	if err := conn.QueryRowContext(ctx, "SELECT @@SESSION.lock_wait_timeout, UTC_TIMESTAMP(6)").Scan(&wait, &now); err != nil {
		return 0, err
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION lock_wait_timeout = 5"); err != nil {
		return 0, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("SET SESSION lock_wait_timeout = %d", wait))
	parts, err := a.partitions(ctx, conn)
	if err != nil {
		return 0, err
	}
	cutoff := now.Add(-a.Retain)
	var doomed []string
	var removed int64
	var last time.Time
	for _, p := range parts {
		if p.max {
			continue
		}
		if p.end.After(cutoff) {
			if p.end.After(last) {
				last = p.end
			}
			continue
		}
		var n int64
		if err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s PARTITION (%s)", a.Table, p.name)).Scan(&n); err != nil {
			return 0, fmt.Errorf("archive %s: counting partition %s: %w", a.Table, p.name, err)
		}
		doomed, removed = append(doomed, p.name), removed+n
	}
	if len(doomed) > 0 {
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s DROP PARTITION %s", a.Table, strings.Join(doomed, ", "))); err != nil {
			return 0, fmt.Errorf("archive %s: dropping partitions %s: %w", a.Table, strings.Join(doomed, ", "), err)
		}
	}
	today := now.UTC().Truncate(24 * time.Hour)
	var split []string
	for i := range archiveAhead + 1 {
		day := today.AddDate(0, 0, i)
		end := day.AddDate(0, 0, 1)
		if !end.After(last) {
			continue
		}
		split = append(split, fmt.Sprintf("PARTITION p%s VALUES LESS THAN ('%s')", day.Format("20060102"), end.Format(time.DateTime)))
	}
	if len(split) > 0 {
		split = append(split, "PARTITION "+lastPartition+" VALUES LESS THAN (MAXVALUE)")
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s REORGANIZE PARTITION %s INTO (\n    %s\n)", a.Table, lastPartition, strings.Join(split, ",\n    "))); err != nil {
			return removed, fmt.Errorf("archive %s: making the coming days' partitions: %w", a.Table, err)
		}
	}
	return removed, nil
}

// partition is one of the archive's partitions: its name and the end of
// its range (exclusive), or max for pmax.
type partition struct {
	name string
	end  time.Time
	max  bool
}

// partitions lists the archive's partitions in order, from
// information_schema, whose PARTITION_DESCRIPTION is the VALUES LESS THAN
// bound: a quoted DATETIME, or MAXVALUE.
func (a Archive) partitions(ctx context.Context, conn *sql.Conn) ([]partition, error) {
	rows, err := conn.QueryContext(ctx, `SELECT PARTITION_NAME, PARTITION_DESCRIPTION
FROM information_schema.PARTITIONS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?
ORDER BY PARTITION_ORDINAL_POSITION`, a.Table)
	if err != nil {
		return nil, fmt.Errorf("archive %s: listing its partitions: %w", a.Table, err)
	}
	defer rows.Close()
	var out []partition
	for rows.Next() {
		var name, desc sql.NullString
		if err := rows.Scan(&name, &desc); err != nil {
			return nil, err
		}
		if !name.Valid {
			return nil, fmt.Errorf("archive %s is not partitioned", a.Table)
		}
		p := partition{name: name.String, max: desc.String == "MAXVALUE"}
		if !p.max {
			end, err := time.Parse(time.DateTime, strings.Trim(desc.String, "'"))
			if err != nil {
				return nil, fmt.Errorf("archive %s: partition %s ends at %q: %w", a.Table, p.name, desc.String, err)
			}
			p.end = end
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 || !out[len(out)-1].max {
		return nil, errors.New("archive " + a.Table + ": no last partition " + lastPartition + " to split")
	}
	return out, nil
}

// archiveLock is the name of the archive's maintenance lock; MySQL takes
// names of up to 64 characters, so a long table name is hashed.
func archiveLock(table string) string {
	name := "queuegen archive " + table
	if len(name) > 64 {
		sum := sha1.Sum([]byte(table))
		name = "queuegen archive " + hex.EncodeToString(sum[:])
	}
	return name
}
