package bench

import (
	"fmt"
	"strings"
)

// This file holds every T-SQL statement the SQL Server target runs of its
// own (the generated package msjobs holds the queues'), as constants and
// as functions of the names they take: sqlserver.go holds no SQL, so that
// TestSQLServerBenchGrammar renders each statement here and passes it
// through the T-SQL grammar check. No SQL Server runs where queuegen is
// developed: that check, and TestSQLServerBenchNames, are as far as these
// statements have been tried.
//
// Parameters are go-mssqldb's @p1, @p2… in the order of the arguments;
// times are DATETIME2 in UTC, so the database's clock is SYSUTCDATETIME().
// Names of databases and tables are plain identifiers (msPlainName),
// checked before they are written into a statement.

// msCreateDatabase creates the bench's database, with the server's
// defaults (those of model): no snapshot isolation, no read committed
// snapshot, as a database an application creates has them.
func msCreateDatabase(database string) string {
	return "CREATE DATABASE [" + database + "]"
}

// msDropDatabase drops the bench's database if it is there, ending the
// sessions on it first (a database in use cannot be dropped).
func msDropDatabase(database string) string {
	return fmt.Sprintf(`IF DB_ID(N'%[1]s') IS NOT NULL
BEGIN
    ALTER DATABASE [%[1]s] SET SINGLE_USER WITH ROLLBACK IMMEDIATE;
    DROP DATABASE [%[1]s];
END`, database)
}

// msAllowSnapshot lets the bench's database (the connection's) run
// SNAPSHOT transactions: from then on, every update and delete keeps the
// row's previous version in tempdb's version store, for as long as a
// snapshot transaction that began before it may read it.
const msAllowSnapshot = "ALTER DATABASE CURRENT SET ALLOW_SNAPSHOT_ISOLATION ON"

// msBeginSnapshot begins a SNAPSHOT transaction and reads the bench table,
// which is when SQL Server takes the transaction's snapshot (not at BEGIN).
const msBeginSnapshot = `SET TRANSACTION ISOLATION LEVEL SNAPSHOT;
BEGIN TRANSACTION;
SELECT COUNT_BIG(*) FROM bench_queue WHERE id < 0`

// msEndSnapshot ends it and leaves the session at the default isolation
// level again.
const msEndSnapshot = `IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED`

// msUpdateStatistics refreshes the optimizer's statistics of table (all
// its indexes', the filtered ones too), as fill's ANALYZE does on the
// other engines.
func msUpdateStatistics(table string) string {
	return "UPDATE STATISTICS " + table
}

// msInsertPolled inserts one job into bench_queue as another process
// would (nothing in this process wakes its workers): @p1 recipient, @p2
// n, @p3 max_attempts.
const msInsertPolled = `INSERT INTO bench_queue (recipient, n, max_attempts, created_at, run_after)
VALUES (@p1, @p2, @p3, SYSUTCDATETIME(), SYSUTCDATETIME())`

// msCountRows counts the rows of bench_queue.
const msCountRows = "SELECT COUNT_BIG(*) FROM bench_queue"

// msKeptBatch is how many finished jobs msFillKept inserts a statement:
// the 10^5 numbers its five digit tables make.
const msKeptBatch = 100000

// msFillKept inserts @p2 (at most msKeptBatch) succeeded jobs into
// bench_kept_queue, @p1 their max_attempts: the kept history drain-scale
// drains beside. The numbers come from five tables of the ten digits,
// crossed.
var msFillKept = func() string {
	digits := "(VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9))"
	var from []string
	for _, a := range []string{"a", "b", "c", "e", "f"} {
		from = append(from, digits+" AS "+a+"(d)")
	}
	return `INSERT INTO bench_kept_queue (state, attempt, max_attempts, created_at, run_after, attempted_at, finished_at, recipient, n)
SELECT TOP (@p2) 'succeeded', 1, @p1, SYSUTCDATETIME(), SYSUTCDATETIME(), SYSUTCDATETIME(), SYSUTCDATETIME(), N'a@example.com',
       a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d
FROM ` + strings.Join(from, "\nCROSS JOIN ")
}()

// msGhosts counts the ghost records of table's indexes (deleted rows not
// yet removed by the ghost cleanup task: SQL Server's dead rows), from a
// sample of its pages.
func msGhosts(table string) string {
	return "SELECT COALESCE(SUM(ghost_record_count), 0) FROM sys.dm_db_index_physical_stats(DB_ID(), OBJECT_ID(N'" + table + "'), NULL, NULL, 'SAMPLED')"
}

// msVersionStore is the bytes tempdb's version store holds for the
// connection's database (SQL Server 2017, or 2016 SP2, and later; it
// needs VIEW SERVER STATE).
const msVersionStore = "SELECT COALESCE(SUM(reserved_page_count), 0) * 8192 FROM sys.dm_tran_version_store_space_usage WHERE database_id = DB_ID()"

// msRowsAndSize are table @p1's rows (those of its heap or clustered
// index) and the bytes of its used pages, indexes included.
const msRowsAndSize = `SELECT COALESCE(SUM(CASE WHEN index_id IN (0, 1) THEN row_count END), 0),
       COALESCE(SUM(used_page_count), 0) * 8192
FROM sys.dm_db_partition_stats WHERE object_id = OBJECT_ID(@p1)`

// msSizes are table @p1's bytes: its data (heap or clustered index, with
// its LOB and row-overflow pages) and its other indexes.
const msSizes = `SELECT COALESCE(SUM(CASE WHEN index_id IN (0, 1) THEN used_page_count END), 0) * 8192,
       COALESCE(SUM(CASE WHEN index_id > 1 THEN used_page_count END), 0) * 8192
FROM sys.dm_db_partition_stats WHERE object_id = OBJECT_ID(@p1)`

// msLimitedRunning samples bench_limited's running jobs: the most of one
// tenant and all of them. A lease-mode job is in state running exactly
// while it is leased; the sample reads the lease index, filtered on
// state = 'running' (named, so that its range locks never cover the
// table), and looks each job's tenant up. It reads under HOLDLOCK
// (serializable for this table): it holds its range locks until the
// statement ends, so its counts are of one moment, as a snapshot's are on
// the other engines (a locking read at READ COMMITTED could count a job
// that finished and the job that took its slot after it, and see the
// limits broken). The claims and completions wait on it for its few rows;
// in a deadlock the sample is the victim (DEADLOCK_PRIORITY LOW), and the
// workload skips a failed sample.
const msLimitedRunning = `SET DEADLOCK_PRIORITY LOW;
SELECT COALESCE(MAX(per.n), 0), COALESCE(SUM(per.n), 0)
FROM (SELECT COUNT(*) AS n FROM bench_limited_queue WITH (HOLDLOCK, INDEX(bench_limited_queue_lease_idx)) WHERE state = 'running' GROUP BY tenant) AS per`

// msLimitedLeft counts bench_limited's available jobs and its running
// ones. A job only moves from available to running to succeeded here (the
// bench's jobs never fail), so two counts at READ COMMITTED, which wait
// for the rows a claim or completion holds, are never both 0 while a job
// is left.
const msLimitedLeft = `SELECT (SELECT COUNT(*) FROM bench_limited_queue WHERE state = 'available'),
       (SELECT COUNT(*) FROM bench_limited_queue WHERE state = 'running')`

// msRatedLeft counts bench_rated's jobs not yet succeeded.
const msRatedLeft = "SELECT COUNT(*) FROM bench_rated_queue WHERE state <> 'succeeded'"

// msClaimTimes are bench_rated's jobs' claim times, in order.
const msClaimTimes = "SELECT attempted_at FROM bench_rated_queue ORDER BY attempted_at"
