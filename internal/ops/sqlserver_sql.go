package ops

import (
	"fmt"
	"strings"
	"time"

	"github.com/queuegen/queuegen/queue/queueimpl/mssqlimpl"
)

// This file holds every SQL statement of the SQL Server backend, as
// functions of the names and predicates they take: the other
// sqlserver*.go files hold no SQL, so that TestSQLServerOpsGrammar renders
// each statement here and passes it through the T-SQL grammar check.
//
// The statements are T-SQL for go-mssqldb's "sqlserver" driver: parameters
// are @p1, @p2… in the order of the arguments; a list of ids or names is
// one parameter, a JSON array, which OPENJSON reads (a list of bound
// parameters would stop at SQL Server's 2,100 per statement); times are
// DATETIME2 in UTC, so the database's clock is SYSUTCDATETIME().
//
// Reads that must not wait for a worker take READPAST (they pass over the
// rows another transaction has locked, as SKIP LOCKED does), with
// READCOMMITTEDLOCK so that they lock, and pass over locked rows, even
// where READ_COMMITTED_SNAPSHOT is on. The reads that must see the rows a
// transaction holds (see msHeld) take NOLOCK: they neither wait nor lock,
// and see the holder's uncommitted row.

// msTime is a time as the driver binds it for a DATETIME2 column (UTC),
// rather than as DATETIMEOFFSET, which the column would be converted to.
func msTime(t time.Time) any { return mssqlimpl.DateTime2(t) }

// msReadPast and msDirty are the table hints of the two kinds of read.
const (
	msReadPast = "WITH (READPAST, READCOMMITTEDLOCK)"
	msDirty    = "WITH (NOLOCK)"
)

// msIDs is a predicate: id is one of the JSON array of ids bound at
// parameter p.
func msIDs(p int) string {
	return fmt.Sprintf("id IN (SELECT id FROM OPENJSON(@p%d) WITH (id BIGINT '$'))", p)
}

// msNoneHeld is the {held} predicate where no job is held.
const msNoneHeld = "(1 = 0)"

// msPredicates are the filter states (see predicates, their one
// definition) in T-SQL. A job that never failed keeps errors' default,
// the empty array N'[]'; a failure appends to it.
var msPredicates = map[string]string{
	"all":       "(1 = 1)",
	"available": "state = 'available' AND run_after <= SYSUTCDATETIME() AND NOT {held}",
	"scheduled": "state = 'available' AND run_after > SYSUTCDATETIME() AND errors = N'[]' AND NOT {held}",
	"retrying":  "state = 'available' AND run_after > SYSUTCDATETIME() AND errors <> N'[]' AND NOT {held}",
	"failed":    "(state = 'dead' OR (state = 'available' AND errors <> N'[]' AND NOT {held}))",
	"running":   "((state = 'running' AND (locked_until IS NULL OR locked_until >= SYSUTCDATETIME())) OR {held})",
	"expired":   "(state = 'running' AND locked_until < SYSUTCDATETIME())",
	"succeeded": "state = 'succeeded'",
	"dead":      "state = 'dead'",
}

// msApplicable are the jobs each action applies to (see applicable) in
// T-SQL.
var msApplicable = map[Action]string{
	Retry:  "(state IN ('dead', 'succeeded') OR (state = 'available' AND run_after > SYSUTCDATETIME() AND errors <> N'[]'))",
	Cancel: "state IN ('available', 'running')",
	Purge:  "state IN ('available', 'running', 'succeeded', 'dead')",
}

// msQuote quotes a name in brackets.
func msQuote(name string) string { return "[" + strings.ReplaceAll(name, "]", "]]") + "]" }

// msKind is how a column of SQL Server type typ renders in a payload's
// JSON (see Job.Payload), and the expression that selects it: a
// uniqueidentifier as its text, in lower case as PostgreSQL's uuid.
func msKind(name, typ string, isJSON bool) (columnKind, string) {
	col := msQuote(name)
	switch strings.ToLower(typ) {
	case "bit":
		return kindBool, col
	case "tinyint", "smallint", "int", "bigint", "decimal", "numeric", "float", "money", "smallmoney":
		return kindNumber, col
	case "real":
		return kindReal, col
	case "datetime2", "datetime", "smalldatetime", "datetimeoffset":
		return kindTime, col
	case "date":
		return kindDate, col
	case "binary", "varbinary", "image", "timestamp", "rowversion":
		return kindBytes, col
	case "uniqueidentifier":
		return kindString, "LOWER(CONVERT(NVARCHAR(36), " + col + "))"
	}
	if isJSON {
		return kindJSON, col
	}
	return kindString, col
}

// msNarrowing is Filter.narrowing in T-SQL, its parameters numbered from
// first: a payload column compares as NVARCHAR text, and the error text is
// sought byte for byte (a binary collation: case-sensitive, as on the
// other engines) in each element of the errors array.
func (f Filter) msNarrowing(first int) (string, []any) {
	var where []string
	var args []any
	add := func(pred string, arg any) {
		where = append(where, fmt.Sprintf(pred, fmt.Sprintf("@p%d", first+len(args))))
		args = append(args, arg)
	}
	if !f.Since.IsZero() {
		add("created_at >= %s", msTime(f.Since))
	}
	if !f.Until.IsZero() {
		add("created_at < %s", msTime(f.Until))
	}
	if f.Column != "" {
		add("CAST("+msQuote(f.Column)+" AS NVARCHAR(MAX)) = %s", f.Value)
	}
	if f.ErrorText != "" {
		add("EXISTS (SELECT 1 FROM OPENJSON(errors) AS e WHERE CHARINDEX(CAST(%s AS NVARCHAR(MAX)) COLLATE Latin1_General_100_BIN2, e.value COLLATE Latin1_General_100_BIN2) > 0)", f.ErrorText)
	}
	if len(where) == 0 {
		return "", nil
	}
	return " AND " + strings.Join(where, " AND "), args
}

// msSQL builds the statements; t is a queue table, quoted and qualified
// (msBackend.table), names the registry's tables likewise.
type msSQL struct{ schema string }

// name is a table of queuegen's in the backend's schema.
func (s msSQL) name(table string) string { return msQuote(s.schema) + "." + msQuote(table) }

func (s msSQL) queues() string {
	return "SELECT name, table_name, mode, paused FROM " + s.name("queuegen_queues") + " ORDER BY name"
}

// columns lists a table's columns, in its order, with each one's type and
// whether a check constraint named <table>_<column>_json_check (the one
// the generated migrations give a JSON column) holds it. @p1 is the table
// quoted and qualified (OBJECT_ID's argument).
func (s msSQL) columns() string {
	return `SELECT c.name, t.name,
    CASE WHEN EXISTS (SELECT 1 FROM sys.check_constraints AS k
                      WHERE k.parent_object_id = c.object_id
                        AND k.name = OBJECT_NAME(c.object_id) + N'_' + c.name + N'_json_check') THEN 1 ELSE 0 END
FROM sys.columns AS c
JOIN sys.types AS t ON t.user_type_id = c.user_type_id
WHERE c.object_id = OBJECT_ID(@p1)
ORDER BY c.column_id`
}

func (s msSQL) now() string { return "SELECT SYSUTCDATETIME()" }

// stats counts t's jobs by state at @p1 (the database's clock, read
// once), with the oldest due job's time and the claims of the minute
// before @p1, passing over the rows other transactions lock.
func (s msSQL) stats(t string) string {
	return `SELECT
    COUNT_BIG(CASE WHEN state = 'available' AND run_after <= @p1 THEN 1 END),
    COUNT_BIG(CASE WHEN state = 'available' AND run_after > @p1 AND errors = N'[]' THEN 1 END),
    COUNT_BIG(CASE WHEN state = 'available' AND run_after > @p1 AND errors <> N'[]' THEN 1 END),
    COUNT_BIG(CASE WHEN state = 'running' AND (locked_until IS NULL OR locked_until >= @p1) THEN 1 END),
    COUNT_BIG(CASE WHEN state = 'running' AND locked_until < @p1 THEN 1 END),
    COUNT_BIG(CASE WHEN state = 'succeeded' THEN 1 END),
    COUNT_BIG(CASE WHEN state = 'dead' THEN 1 END),
    MIN(CASE WHEN state = 'available' AND run_after <= @p1 THEN run_after END),
    COUNT_BIG(CASE WHEN attempted_at > DATEADD(minute, -1, @p1) THEN 1 END)
FROM ` + t + ` ` + msReadPast
}

// claimedDue counts the due jobs at @p1 that some claim took (attempt >
// 0), read as hint reads them: NOLOCK sees those a transaction in
// progress holds, READPAST passes over them, so the difference is the
// held jobs (see msHeld).
func (s msSQL) claimedDue(t, hint string) string {
	return "SELECT COUNT_BIG(*) FROM " + t + " " + hint + "\nWHERE state = 'available' AND run_after <= @p1 AND attempt > 0"
}

// claimedDueIDs lists, ascending, those jobs (see claimedDue); with only,
// those of the JSON array of ids @p2 too.
func (s msSQL) claimedDueIDs(t, hint string, only bool) string {
	q := "SELECT id FROM " + t + " " + hint + "\nWHERE state = 'available' AND run_after <= @p1 AND attempt > 0"
	if only {
		q += " AND " + msIDs(2)
	}
	return q + "\nORDER BY id"
}

func (s msSQL) oldest(t string) string {
	return `SELECT CAST(DATEDIFF_BIG(microsecond, MIN(run_after), SYSUTCDATETIME()) AS FLOAT) / 1e6
FROM ` + t + ` ` + msReadPast + `
WHERE state = 'available' AND run_after <= SYSUTCDATETIME()`
}

// lastHour counts the failures recorded in the last hour (each failure's
// time is an ISO 8601 UTC text, which DATETIMEOFFSET reads), the jobs
// that succeeded in it, and whether the table keeps succeeded jobs.
func (s msSQL) lastHour(t string) string {
	return `SELECT
    (SELECT COUNT_BIG(*)
     FROM ` + t + ` AS job ` + msReadPast + `
     CROSS APPLY OPENJSON(job.failures) WITH (at NVARCHAR(40) '$.at') AS f
     WHERE job.failures IS NOT NULL
       AND TRY_CONVERT(DATETIMEOFFSET(7), f.at) > DATEADD(hour, -1, SYSDATETIMEOFFSET())),
    COUNT_BIG(CASE WHEN state = 'succeeded' AND finished_at > DATEADD(hour, -1, SYSUTCDATETIME()) THEN 1 END),
    CAST(COALESCE(MAX(CASE WHEN state = 'succeeded' THEN 1 ELSE 0 END), 0) AS BIT)
FROM ` + t + ` ` + msReadPast
}

// rows is the row count of a table's heap or clustered index, from the
// partition statistics (@p1: the table, quoted and qualified); NULL for
// no such table.
func (s msSQL) rows() string {
	return `SELECT SUM(row_count) FROM sys.dm_db_partition_stats
WHERE object_id = OBJECT_ID(@p1) AND index_id IN (0, 1)`
}

// catalogRows is rows from the catalog's sys.partitions, which a user
// without VIEW DATABASE STATE may read (for the tables they may read).
func (s msSQL) catalogRows() string {
	return `SELECT SUM(rows) FROM sys.partitions
WHERE object_id = OBJECT_ID(@p1) AND index_id IN (0, 1)`
}

// showplan turns the session's estimated plans on or off: while on, a
// statement returns its plan (XML) and does not run.
func (s msSQL) showplan(on bool) string {
	if on {
		return "SET SHOWPLAN_XML ON"
	}
	return "SET SHOWPLAN_XML OFF"
}

// estimate is the statement whose plan estimates the jobs of t in state:
// the rows it returns (StatementEstRows).
func (s msSQL) estimate(t, state string) string {
	return "SELECT 1 FROM " + t + " WHERE " + withHeld(msPredicates[state], msNoneHeld)
}

// finished counts t's finished jobs by the minute they finished, since
// @p1.
func (s msSQL) finished(t string) string {
	return `SELECT m.at, COUNT_BIG(*)
FROM ` + t + ` AS job ` + msReadPast + `
CROSS APPLY (SELECT DATEADD(minute, DATEDIFF(minute, CAST('2000-01-01' AS DATETIME2(6)), job.finished_at), CAST('2000-01-01' AS DATETIME2(6))) AS at) AS m
WHERE job.state IN ('succeeded', 'dead') AND job.finished_at >= @p1
GROUP BY m.at
ORDER BY m.at`
}

func (s msSQL) periodic() string {
	return "SELECT queue, name, last_tick FROM " + s.name("queuegen_periodic") + " ORDER BY queue, name"
}

// oldestSnapshot finds the session whose open transaction began first, of
// this database's (it holds back the log's truncation, and the version
// store where snapshots are on).
func (s msSQL) oldestSnapshot() string {
	return `SELECT TOP (1) st.session_id, COALESCE(es.login_name, N''), COALESCE(es.program_name, N''),
    CAST(DATEDIFF_BIG(millisecond, at.transaction_begin_time, SYSDATETIME()) AS FLOAT) / 1e3,
    COALESCE(LEFT(txt.text, 100), N'')
FROM sys.dm_tran_session_transactions AS st
JOIN sys.dm_tran_active_transactions AS at ON at.transaction_id = st.transaction_id
JOIN sys.dm_exec_sessions AS es ON es.session_id = st.session_id
LEFT JOIN sys.dm_exec_connections AS c ON c.session_id = st.session_id
OUTER APPLY sys.dm_exec_sql_text(c.most_recent_sql_handle) AS txt
WHERE st.session_id <> @@SPID AND es.database_id = DB_ID()
ORDER BY at.transaction_begin_time`
}

// page reads up to @p1 jobs of t matching where, newest first, passing
// over the rows other transactions lock; selects are the payload columns'
// expressions, and failures says whether t has the failures column.
func (s msSQL) page(t, where string, failures bool, selects []string) string {
	return s.pageOf("TOP (@p1) ", t, msReadPast, where, failures, selects)
}

// heldPage reads the jobs of the JSON array of ids @p1 that match where,
// as their holders have them (NOLOCK: the jobs that page passes over).
func (s msSQL) heldPage(t, where string, failures bool, selects []string) string {
	return s.pageOf("", t, msDirty, msIDs(1)+" AND "+where, failures, selects)
}

func (s msSQL) pageOf(top, t, hint, where string, failures bool, selects []string) string {
	failuresColumn := "NULL"
	if failures {
		failuresColumn = "failures"
	}
	var sel strings.Builder
	for _, c := range selects {
		sel.WriteString(", " + c)
	}
	return `SELECT ` + top + `id, state, attempt, max_attempts, priority, run_after, created_at, attempted_at,
    finished_at, locked_by, locked_until, unique_key, errors, ` + failuresColumn + sel.String() + `
FROM ` + t + ` ` + hint + `
WHERE ` + where + `
ORDER BY id DESC`
}

// count counts t's jobs matching where that action applies to, passing
// over locked rows.
func (s msSQL) count(t, where string, action Action) string {
	return "SELECT COUNT_BIG(*) FROM " + t + " " + msReadPast + " WHERE " + where + " AND " + msApplicable[action]
}

// matching lists, ascending, t's jobs matching where that action applies
// to, read with hint.
func (s msSQL) matching(t, hint, where string, action Action) string {
	return "SELECT id FROM " + t + " " + hint + " WHERE " + where + " AND " + msApplicable[action] + " ORDER BY id"
}

// heldMatching is matching of the held jobs of the JSON array @p1, as
// their holders have them; where's parameters are numbered from 2.
func (s msSQL) heldMatching(t, where string, action Action) string {
	return s.matching(t, msDirty, msIDs(1)+" AND "+where, action)
}

// lock locks, in a batch's transaction, those of the JSON array of ids @p1
// that action applies to: UPDLOCK holds them until it ends, READPAST
// passes over those another transaction holds.
func (s msSQL) lock(t string, action Action) string {
	return "SELECT id, unique_key FROM " + t + " WITH (ROWLOCK, UPDLOCK, READPAST, READCOMMITTEDLOCK)\nWHERE " + msIDs(1) + " AND " +
		msApplicable[action] + "\nORDER BY id"
}

// batchMatching is those of @p1 that action applies to, as their holders
// have them.
func (s msSQL) batchMatching(t string, action Action) string {
	return "SELECT id FROM " + t + " " + msDirty + " WHERE " + msIDs(1) + " AND " + msApplicable[action] + " ORDER BY id"
}

// holders finds, of the JSON array of unique keys @p1, the newest
// unfinished job holding each, but the jobs of the JSON array of ids @p2
// (NOLOCK: a key an uncommitted job holds counts as held, which the unique
// index would refuse too). The keys take the column's collation, binary.
func (s msSQL) holders(t string) string {
	return `SELECT unique_key, MAX(id) FROM ` + t + ` ` + msDirty + `
WHERE unique_key IN (SELECT k COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p1) WITH (k NVARCHAR(255) '$'))
  AND state IN ('available', 'running')
  AND id NOT IN (SELECT id FROM OPENJSON(@p2) WITH (id BIGINT '$'))
GROUP BY unique_key`
}

// change does action to the jobs of the JSON array @p1, which lock
// locked. A cancel's error is @p2; failures says whether t has the
// failures column, where the cancel records its time and attempt as the
// runtime's failures do (every expression of a SET reads the row as it
// was: the error's index is the count before the append).
func (s msSQL) change(t string, action Action, failures bool) (string, error) {
	in := "\nWHERE " + msIDs(1)
	switch action {
	case Retry:
		return "UPDATE " + t + ` SET state = 'available', run_after = SYSUTCDATETIME(), finished_at = NULL,
    locked_by = NULL, locked_until = NULL,
    max_attempts = CASE WHEN max_attempts > attempt THEN max_attempts ELSE attempt + 1 END` + in, nil
	case Cancel:
		f := ""
		if failures {
			f = `
    failures = JSON_MODIFY(COALESCE(failures, N'[]'), 'append $', JSON_QUERY(CONCAT(N'{"at":"', CONVERT(NVARCHAR(27), SYSUTCDATETIME(), 126), N'Z","attempt":', attempt, N',"error":', (SELECT COUNT(*) FROM OPENJSON(errors)), N'}'))),`
		}
		return "UPDATE " + t + ` SET state = 'dead', finished_at = SYSUTCDATETIME(), locked_by = NULL, locked_until = NULL,` + f + `
    errors = JSON_MODIFY(errors, 'append $', @p2)` + in, nil
	case Purge:
		return "DELETE FROM " + t + in, nil
	}
	return "", fmt.Errorf("unknown action %q", action)
}

func (s msSQL) setPaused() string {
	return "UPDATE " + s.name("queuegen_queues") + " SET paused = @p1 WHERE name = @p2"
}

func (s msSQL) nodes() string {
	return `SELECT node, queue, concurrency, running, host, pid, started_at, heartbeat_at, heartbeat_ms
FROM ` + s.name("queuegen_nodes") + ` ` + msReadPast + `
ORDER BY node, queue`
}

// leasesByNode counts t's leased jobs by node, through the lease index
// (its filter is state = 'running').
func (s msSQL) leasesByNode(t string) string {
	return `SELECT locked_by, COUNT_BIG(*) FROM ` + t + ` ` + msReadPast + `
WHERE state = 'running' AND locked_until IS NOT NULL AND locked_by IS NOT NULL
GROUP BY locked_by`
}

// leasesOf lists up to @p1 of t's jobs leased to the nodes of the JSON
// array @p2, by id.
func (s msSQL) leasesOf(t string) string {
	return `SELECT TOP (@p1) id, locked_by, attempt, locked_until FROM ` + t + ` ` + msReadPast + `
WHERE state = 'running' AND locked_until IS NOT NULL
  AND locked_by IN (SELECT n FROM OPENJSON(@p2) WITH (n NVARCHAR(255) '$'))
ORDER BY id`
}

// lockTimeout bounds, on each connection, how long a statement waits for
// a lock it cannot pass over (milliseconds).
func (s msSQL) lockTimeout(ms int64) string { return fmt.Sprintf("SET LOCK_TIMEOUT %d", ms) }

// msWhere renders a checked filter as a T-SQL predicate with its
// parameters, numbered from first, with ids below before when it is > 0;
// held are the jobs a transaction in progress holds (see msHeld).
func msWhere(f Filter, held []int64, first int, before int64) (string, []any) {
	var where string
	var args []any
	if f.ID != 0 {
		where, args = fmt.Sprintf("id = @p%d", first), []any{f.ID}
	} else {
		pred := msPredicates[f.State]
		heldPred := msNoneHeld
		if strings.Contains(pred, "{held}") && len(held) > 0 {
			heldPred, args = "("+msIDs(first)+")", []any{jsonArray(held)}
		}
		where = withHeld(pred, heldPred)
	}
	more, margs := f.msNarrowing(first + len(args))
	where, args = where+more, append(args, margs...)
	if before > 0 {
		where += fmt.Sprintf(" AND id < @p%d", first+len(args))
		args = append(args, before)
	}
	return where, args
}
