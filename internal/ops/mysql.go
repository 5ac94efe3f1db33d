package ops

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queuegen/queuegen/internal/dburl"
	myengine "github.com/queuegen/queuegen/internal/engine/mysql"
)

// myBackend is the operations on MySQL or MariaDB, through database/sql,
// on the queues of the connection's database (MySQL has no schemas).
//
// The queue tables are those of the generated MySQL migrations: state an
// ENUM, errors a JSON array, times DATETIME(6) in UTC (so the database's
// clock is UTC_TIMESTAMP(6), never NOW()), and, in a queue with unique
// keys, a stored generated column unique_active (the unique key while the
// job is unfinished) under a unique index.
type myBackend struct {
	db       *sql.DB
	database string

	mu      sync.Mutex
	mariadb *bool // whether the server is MariaDB, once known
}

// mySessionParams are set on each of the pool's connections, unless the
// address sets them: the actions never wait on a row (SKIP LOCKED), and
// these bound waiting for anything else, a row lock a statement cannot
// skip or a table's metadata lock, as PostgreSQL's lock_timeout does.
var mySessionParams = map[string]string{
	"innodb_lock_wait_timeout": strconv.Itoa(int(lockTimeout.Seconds())),
	"lock_wait_timeout":        strconv.Itoa(int(lockTimeout.Seconds())),
}

func init() {
	backends[myengine.Name] = func(_ context.Context, db dburl.DB, schema string) (backend, error) {
		if schema != "" {
			return nil, fmt.Errorf("ops: schema %q given for a MySQL database: MySQL has no schemas, the database the address names holds the queues", schema)
		}
		b, err := openMySQL(db)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
}

func openMySQL(db dburl.DB) (*myBackend, error) {
	if db.MySQL == nil {
		return nil, errors.New("ops: a MySQL address without its driver configuration (parse it with dburl.Parse)")
	}
	cfg := dburl.Config(db.MySQL)
	if cfg.Timeout == 0 { // the address's timeout, else this
		cfg.Timeout = connectTimeout
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	for k, v := range mySessionParams {
		if _, ok := cfg.Params[k]; !ok {
			cfg.Params[k] = v
		}
	}
	h, err := dburl.DB{Engine: dburl.MySQL, URL: db.URL, MySQL: cfg}.Open()
	if err != nil {
		return nil, err
	}
	return &myBackend{db: h, database: cfg.DBName}, nil
}

func (m *myBackend) ping(ctx context.Context) error { return m.db.PingContext(ctx) }

func (m *myBackend) close() { m.db.Close() }

// Server error numbers.
const (
	erNoSuchTable = 1146
	erDeadlock    = 1213
)

func myErrno(err error) uint16 {
	var my *mysql.MySQLError
	if errors.As(err, &my) {
		return my.Number
	}
	return 0
}

func (m *myBackend) queues(ctx context.Context) ([]Queue, error) {
	rows, err := m.db.QueryContext(ctx, "SELECT name, table_name, mode, paused FROM queuegen_queues ORDER BY name")
	if err != nil {
		if myErrno(err) == erNoSuchTable {
			return nil, fmt.Errorf("no queue registry in database %s: apply the migrations first (queuegen migrate up)", m.database)
		}
		return nil, err
	}
	defer rows.Close()
	var qs []Queue
	for rows.Next() {
		var q Queue
		if err := rows.Scan(&q.Name, &q.Table, &q.Mode, &q.Paused); err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	return qs, rows.Err()
}

// plainName is a name that needs no quoting, which every table name
// queuegen generates is.
var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// table is q's table, quoted, once its name is checked to be a plain
// identifier: the registry is a table anyone with access may write.
func (m *myBackend) table(q Queue) (string, error) {
	if !plainName.MatchString(q.Table) {
		return "", fmt.Errorf("queue %s: the registry names its table %q, which is not a plain identifier", q.Name, q.Table)
	}
	return "`" + q.Table + "`", nil
}

// quoteColumn quotes a column name the catalog gave.
func quoteColumn(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// placeholders is n placeholders, comma-separated.
func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

// anys turns values into arguments.
func anys[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// myWhere renders a checked filter as a predicate with its parameters,
// held being the jobs a transaction in progress holds (see heldIn).
func myWhere(f Filter, held []int64) (string, []any) {
	heldPred, args := "FALSE", []any(nil)
	if len(held) > 0 {
		heldPred, args = "id IN ("+placeholders(len(held))+")", anys(held)
	}
	where := withHeld(predicates[f.State].my, heldPred)
	if !strings.Contains(predicates[f.State].my, "{held}") {
		args = nil
	}
	if f.ID != 0 {
		where, args = "id = ?", []any{f.ID}
	}
	more, margs := f.narrowing(func(int) string { return "?" }, 0, quoteColumn, true)
	return where + more, append(args, margs...)
}

func (m *myBackend) columns(ctx context.Context, q Queue) ([]string, error) {
	cols, err := m.payloadColumns(ctx, q)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return names, nil
}

// stats counts q's jobs as Stats documents: one statement of counts by
// state, then, for a transaction-mode queue, a locking read of the due
// jobs passing over those a transaction holds, both at one instant, now,
// read from the database's clock.
func (m *myBackend) stats(ctx context.Context, q Queue, s *Stats) error {
	return m.statsOn(ctx, m.db, q, s)
}

// myBeginner is a pool or one of its connections.
type myBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

func (m *myBackend) statsOn(ctx context.Context, db myBeginner, q Queue, s *Stats) error {
	t, err := m.table(q)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var now time.Time
	if err := tx.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&now); err != nil {
		return err
	}
	var due, claims int64
	var oldest *time.Time
	err = tx.QueryRowContext(ctx, `SELECT
    COUNT(CASE WHEN state = 'available' AND run_after <= ? THEN 1 END),
    COUNT(CASE WHEN state = 'available' AND run_after > ? AND JSON_LENGTH(errors) = 0 THEN 1 END),
    COUNT(CASE WHEN state = 'available' AND run_after > ? AND JSON_LENGTH(errors) > 0 THEN 1 END),
    COUNT(CASE WHEN state = 'running' THEN 1 END),
    COUNT(CASE WHEN state = 'succeeded' THEN 1 END),
    COUNT(CASE WHEN state = 'dead' THEN 1 END),
    MIN(CASE WHEN state = 'available' AND run_after <= ? THEN run_after END),
    COUNT(CASE WHEN attempted_at > ? THEN 1 END)
FROM `+t, now, now, now, now, now.Add(-time.Minute)).Scan(&due, &s.Scheduled, &s.Retrying, &s.Running, &s.Succeeded, &s.Dead, &oldest, &claims)
	if err != nil {
		return err
	}
	s.Ready = due
	if q.Mode == "transaction" && due > 0 {
		// A transaction-mode worker holds its job by the claiming
		// transaction's row lock, which no plain read sees; its job is
		// due (a claim takes due jobs and leaves run_after as it was).
		// Count the due jobs that can be locked: the others are held.
		var free int64
		err := tx.QueryRowContext(ctx, "SELECT COUNT(*), MIN(run_after) FROM "+t+
			" WHERE state = 'available' AND run_after <= ? FOR UPDATE SKIP LOCKED", now).Scan(&free, &oldest)
		if err != nil {
			return err
		}
		s.Ready = min(due, free)
		s.Running += due - s.Ready
	}
	if oldest != nil {
		s.OldestAge = max(now.Sub(*oldest).Seconds(), 0)
	}
	s.ClaimsPerSecond = float64(claims) / 60
	return nil
}

func (m *myBackend) baseStats(context.Context, string, *Stats) error { return ErrNoBaseTable }

// myColumn is a payload column and how its values render in JSON.
type myColumn struct {
	name string
	kind columnKind
}

type columnKind int

const (
	kindString columnKind = iota
	kindJSON
	kindBool
	kindNumber
	kindTime
	kindDate
	kindBytes
)

// payloadColumns reads q's payload columns from the catalog: every column
// but the bookkeeping ones (unique_active among them), keyed as
// PostgreSQL's jsonb orders keys, shortest first, then in byte order.
func (m *myBackend) payloadColumns(ctx context.Context, q Queue) ([]myColumn, error) {
	rows, err := m.db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, q.Table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []myColumn
	longtext, found := false, false
	for rows.Next() {
		var name, dataType, columnType string
		if err := rows.Scan(&name, &dataType, &columnType); err != nil {
			return nil, err
		}
		found = true
		if slices.Contains(bookkeeping, name) || name == "unique_active" {
			continue
		}
		kind := kindString
		switch dataType = strings.ToLower(dataType); dataType {
		case "json":
			kind = kindJSON
		case "tinyint":
			kind = kindNumber
			if strings.HasPrefix(strings.ToLower(columnType), "tinyint(1)") {
				kind = kindBool
			}
		case "smallint", "mediumint", "int", "integer", "bigint", "decimal", "numeric", "float", "double", "real", "year":
			kind = kindNumber
		case "datetime", "timestamp":
			kind = kindTime
		case "date":
			kind = kindDate
		case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "bit":
			kind = kindBytes
		case "longtext":
			longtext = true
		}
		cols = append(cols, myColumn{name: name, kind: kind})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("queue %s: no table %s in database %s", q.Name, q.Table, m.database)
	}
	if longtext {
		// MariaDB's JSON is LONGTEXT with a json_valid check named after
		// the column.
		json, err := m.mariaDBJSON(ctx, q.Table)
		if err != nil {
			return nil, err
		}
		for i := range cols {
			if json[cols[i].name] {
				cols[i].kind = kindJSON
			}
		}
	}
	slices.SortStableFunc(cols, func(a, b myColumn) int {
		return cmp.Or(cmp.Compare(len(a.name), len(b.name)), strings.Compare(a.name, b.name))
	})
	return cols, nil
}

// mariaDBJSON names the JSON columns of a table on MariaDB (none on
// MySQL, whose JSON columns the catalog calls json).
func (m *myBackend) mariaDBJSON(ctx context.Context, table string) (map[string]bool, error) {
	maria, err := m.isMariaDB(ctx)
	if err != nil || !maria {
		return nil, err
	}
	rows, err := m.db.QueryContext(ctx, `SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS
WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME = ?`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	json := map[string]bool{}
	for rows.Next() {
		var clause string
		if err := rows.Scan(&clause); err != nil {
			return nil, err
		}
		if name, ok := strings.CutPrefix(clause, "json_valid(`"); ok && strings.HasSuffix(name, "`)") {
			json[strings.ReplaceAll(strings.TrimSuffix(name, "`)"), "``", "`")] = true
		}
	}
	return json, rows.Err()
}

func (m *myBackend) isMariaDB(ctx context.Context) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mariadb == nil {
		var version string
		if err := m.db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
			return false, err
		}
		maria := strings.Contains(strings.ToLower(version), "mariadb")
		m.mariadb = &maria
	}
	return *m.mariadb, nil
}

func (m *myBackend) jobs(ctx context.Context, q Queue, f Filter, before int64, limit int) ([]Job, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	cols, err := m.payloadColumns(ctx, q)
	if err != nil {
		return nil, err
	}
	if f.ID == 0 && f.State == "running" {
		// The held jobs are among the running ones: find them all first.
		held, err := m.heldIn(ctx, q, t)
		if err != nil {
			return nil, err
		}
		where, args := myWhere(f, held)
		jobs, err := m.page(ctx, t, cols, where, args, before, limit)
		for i := range jobs {
			if slices.Contains(held, jobs[i].ID) {
				jobs[i].State, jobs[i].Held = "running", true
			}
		}
		return jobs, err
	}
	// Otherwise a held job is shown running, or (available, failed) left
	// out: each page's due jobs are probed, and a page short of the jobs
	// it left out is topped up from below its last id. Held jobs are few
	// (one per worker at most), so this costs a page or two, however many
	// jobs are due.
	leaveOut := f.ID == 0 && heldMatters(f.State)
	where, args := myWhere(f, nil)
	jobs := []Job{}
	for len(jobs) < limit {
		want := limit - len(jobs)
		page, err := m.page(ctx, t, cols, where, args, before, want)
		if err != nil {
			return nil, err
		}
		var due []int64
		for _, j := range page {
			if j.State == "available" {
				due = append(due, j.ID)
			}
		}
		held, err := m.heldAmong(ctx, q, t, due)
		if err != nil {
			return nil, err
		}
		for _, j := range page {
			if slices.Contains(held, j.ID) {
				if leaveOut {
					continue
				}
				j.State, j.Held = "running", true
			}
			jobs = append(jobs, j)
		}
		if len(page) < want {
			break
		}
		before = page[len(page)-1].ID
	}
	return jobs, nil
}

// page reads up to limit jobs of table t matching where, newest first,
// with ids below before when it is > 0.
func (m *myBackend) page(ctx context.Context, t string, cols []myColumn, where string, args []any, before int64, limit int) ([]Job, error) {
	args = slices.Clone(args)
	if before > 0 {
		where += " AND id < ?"
		args = append(args, before)
	}
	args = append(args, limit)
	var sel strings.Builder
	for _, c := range cols {
		sel.WriteString(", " + quoteColumn(c.name))
	}
	rows, err := m.db.QueryContext(ctx, `SELECT id, state, attempt, max_attempts, priority, run_after, created_at, attempted_at,
    finished_at, locked_by, locked_until, unique_key, errors`+sel.String()+`
FROM `+t+` WHERE `+where+` ORDER BY id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var jobs []Job
	for rows.Next() {
		var j Job
		var errs []byte
		values := make([]any, len(cols))
		dest := []any{&j.ID, &j.State, &j.Attempt, &j.MaxAttempts, &j.Priority, &j.RunAfter, &j.CreatedAt, &j.AttemptedAt,
			&j.FinishedAt, &j.LockedBy, &j.LockedUntil, &j.UniqueKey, &errs}
		for i := range values {
			dest = append(dest, &values[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if j.Errors, err = errorList(errs); err != nil {
			return nil, fmt.Errorf("job %d: errors: %w", j.ID, err)
		}
		if j.Payload, err = payloadJSON(cols, values); err != nil {
			return nil, fmt.Errorf("job %d: payload: %w", j.ID, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, rows.Err()
}

// heldMatters reports whether which jobs are held changes which jobs the
// filter state selects (of the due ones, the only ones a worker holds).
func heldMatters(state string) bool {
	return state == "available" || state == "running" || state == "failed"
}

// heldIn finds, ascending, the jobs a transaction in progress holds, of a
// transaction-mode queue's due jobs: the jobs its workers are working,
// whose row locks no plain read sees. In one READ COMMITTED transaction, rolled back at once, it reads
// the due jobs plainly, then by a locking read that passes over held rows
// (FOR UPDATE SKIP LOCKED), and reads again those the lock passed over:
// the ones still due are held (the others changed meanwhile). The probe
// locks the free due jobs for the length of one scan, which claims
// meanwhile pass over, as stats' probe does. A lease-mode queue's jobs are
// held by a transaction only inside a claim's statement: none are found.
func (m *myBackend) heldIn(ctx context.Context, q Queue, t string) ([]int64, error) {
	return m.probe(ctx, q, t, nil, true)
}

// heldAmong is heldIn of the jobs of ids (none when ids is empty).
func (m *myBackend) heldAmong(ctx context.Context, q Queue, t string, ids []int64) ([]int64, error) {
	return m.probe(ctx, q, t, ids, false)
}

func (m *myBackend) probe(ctx context.Context, q Queue, t string, only []int64, all bool) ([]int64, error) {
	if q.Mode != "transaction" || (!all && len(only) == 0) {
		return nil, nil
	}
	tx, err := m.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var now time.Time
	if err := tx.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&now); err != nil {
		return nil, err
	}
	due, args := "state = 'available' AND run_after <= ?", []any{now}
	if !all {
		due += " AND id IN (" + placeholders(len(only)) + ")"
		args = append(args, anys(only)...)
	}
	seen, err := collectIDs(ctx, tx, "SELECT id FROM "+t+" WHERE "+due, args...)
	if err != nil || len(seen) == 0 {
		return nil, err
	}
	free, err := collectIDs(ctx, tx, "SELECT id FROM "+t+" WHERE "+due+" FOR UPDATE SKIP LOCKED", args...)
	if err != nil {
		return nil, err
	}
	lockable := make(map[int64]bool, len(free))
	for _, id := range free {
		lockable[id] = true
	}
	passed := slices.DeleteFunc(seen, func(id int64) bool { return lockable[id] })
	if len(passed) == 0 {
		return nil, nil
	}
	return collectIDs(ctx, tx, "SELECT id FROM "+t+" WHERE state = 'available' AND run_after <= ? AND id IN ("+placeholders(len(passed))+") ORDER BY id",
		append([]any{now}, anys(passed)...)...)
}

// filterWhere is myWhere of f, with the held jobs it needs found.
func (m *myBackend) filterWhere(ctx context.Context, q Queue, t string, f Filter) (string, []any, error) {
	var held []int64
	if f.ID == 0 && heldMatters(f.State) {
		var err error
		if held, err = m.heldIn(ctx, q, t); err != nil {
			return "", nil, err
		}
	}
	where, args := myWhere(f, held)
	return where, args, nil
}

// errorList reads the errors column, a JSON array of strings; anything
// else in it is kept as its JSON text.
func errorList(doc []byte) ([]string, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(raw))
	for _, r := range raw {
		var s string
		if json.Unmarshal(r, &s) != nil {
			s = string(r)
		}
		out = append(out, s)
	}
	return out, nil
}

// plainJSON is json.Marshal without its escaping of <, > and &, which
// PostgreSQL's to_jsonb does not do either: the text of a value stays
// as it was.
func plainJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// payloadJSON renders a job's payload columns as a JSON object, in the
// forms Job.Payload documents.
func payloadJSON(cols []myColumn, values []any) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		key, _ := plainJSON(c.name)
		b.Write(key)
		b.WriteString(": ")
		v, err := valueJSON(c.kind, values[i])
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.name, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// valueJSON renders one column's value, as the driver returned it.
func valueJSON(kind columnKind, v any) ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	text := func() string {
		switch v := v.(type) {
		case []byte:
			return string(v)
		case string:
			return v
		}
		return fmt.Sprint(v)
	}
	switch kind {
	case kindJSON:
		if doc, err := jsonbOrder([]byte(text())); err == nil {
			return doc, nil
		}
	case kindBool:
		switch v := v.(type) {
		case int64:
			return plainJSON(v != 0)
		case []byte, string:
			return plainJSON(text() != "0")
		}
	case kindNumber:
		switch v := v.(type) {
		case int64, uint64:
			return plainJSON(v)
		case float32:
			return []byte(pgFloat(float64(v), 32)), nil
		case float64:
			return []byte(pgFloat(v, 64)), nil
		}
		if s := text(); json.Valid([]byte(s)) {
			if _, err := strconv.ParseFloat(s, 64); err == nil {
				return []byte(s), nil // DECIMAL, exact as the server wrote it
			}
		}
	case kindTime:
		if t, ok := v.(time.Time); ok {
			return plainJSON(t.UTC().Format("2006-01-02T15:04:05.999999-07:00"))
		}
	case kindDate:
		if t, ok := v.(time.Time); ok {
			return plainJSON(t.Format(time.DateOnly))
		}
	case kindBytes:
		if b, ok := v.([]byte); ok {
			return plainJSON(`\x` + hex.EncodeToString(b))
		}
	}
	if t, ok := v.(time.Time); ok {
		return plainJSON(t.UTC().Format(time.RFC3339Nano))
	}
	return plainJSON(text())
}

// pgFloat renders a FLOAT (bits 32) or DOUBLE as PostgreSQL's to_jsonb
// renders a real or double precision, which jsonb holds as a numeric: the
// shortest digits that read back as the same value of the type, in plain
// decimal notation (0.00000015, never 1.5e-07).
func pgFloat(f float64, bits int) string {
	if f == 0 {
		return "0"
	}
	e := strconv.FormatFloat(f, 'e', -1, bits) // -1.5e-07
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	sign := ""
	if m, ok := strings.CutPrefix(mant, "-"); ok {
		sign, mant = "-", m
	}
	ds := strings.TrimRight(strings.Replace(mant, ".", "", 1), "0")
	switch point := exp + 1; { // the decimal point is after point digits of ds
	case point <= 0:
		return sign + "0." + strings.Repeat("0", -point) + ds
	case point >= len(ds):
		return sign + ds + strings.Repeat("0", point-len(ds))
	default:
		return sign + ds[:point] + "." + ds[point:]
	}
}

// jsonbOrder rewrites a JSON document compactly as PostgreSQL's jsonb
// holds it: each object's keys shortest first, then in byte order (as
// MySQL's JSON orders them too), the last of duplicate keys winning, and
// numbers as numerics (1e2 is 100); MariaDB keeps a document as it was
// written.
func jsonbOrder(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("more than one JSON value")
	}
	var b bytes.Buffer
	err := writeJSONB(&b, v)
	return b.Bytes(), err
}

// pgNumeric writes a JSON number as PostgreSQL's numeric does: in plain
// decimal notation, its scale the digits after the point once the
// exponent is applied, and no sign on zero.
func pgNumeric(n string) string {
	sign := ""
	if rest, ok := strings.CutPrefix(n, "-"); ok {
		sign, n = "-", rest
	}
	mant, expText, _ := strings.Cut(strings.ToLower(n), "e")
	exp, err := strconv.Atoi(strings.TrimPrefix(expText, "+"))
	if expText == "" {
		exp, err = 0, nil
	}
	if err != nil {
		return sign + n
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits, point := whole+frac, len(whole)+exp
	scale := max(0, len(frac)-exp)
	switch {
	case point < 0:
		digits, point = strings.Repeat("0", -point)+digits, 0
	case point > len(digits):
		digits += strings.Repeat("0", point-len(digits))
	}
	intPart, fracPart := strings.TrimLeft(digits[:point], "0"), digits[point:]
	if intPart == "" {
		intPart = "0"
	}
	if len(fracPart) < scale {
		fracPart += strings.Repeat("0", scale-len(fracPart))
	}
	fracPart = fracPart[:scale]
	if strings.Trim(intPart+fracPart, "0") == "" {
		sign = ""
	}
	if fracPart == "" {
		return sign + intPart
	}
	return sign + intPart + "." + fracPart
}

func writeJSONB(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) })
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSONB(b, k); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := writeJSONB(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSONB(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case json.Number:
		b.WriteString(pgNumeric(string(v)))
	default:
		doc, err := plainJSON(v)
		if err != nil {
			return err
		}
		b.Write(doc)
	}
	return nil
}

func (m *myBackend) count(ctx context.Context, q Queue, f Filter, action Action) (int64, error) {
	t, err := m.table(q)
	if err != nil {
		return 0, err
	}
	where, args, err := m.filterWhere(ctx, q, t, f)
	if err != nil {
		return 0, err
	}
	var n int64
	err = m.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t+" WHERE "+where+" AND "+applicable[action].my, args...).Scan(&n)
	return n, err
}

func (m *myBackend) matching(ctx context.Context, q Queue, f Filter, action Action) ([]int64, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	where, args, err := m.filterWhere(ctx, q, t, f)
	if err != nil {
		return nil, err
	}
	return collectIDs(ctx, m.db, "SELECT id FROM "+t+" WHERE "+where+" AND "+applicable[action].my+" ORDER BY id", args...)
}

func (m *myBackend) now(ctx context.Context) (t time.Time, err error) {
	return t, m.db.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&t)
}

// begin begins a batch at READ COMMITTED: its locking reads then lock the
// rows they return and no gaps, which concurrent claims and pushes would
// otherwise wait on (REPEATABLE READ, MySQL's default, locks gaps).
func (m *myBackend) begin(ctx context.Context, q Queue) (batch, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	tx, err := m.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, err
	}
	return &myBatch{m: m, tx: tx, q: q, table: t}, nil
}

// retryable: a deadlock (1213) or a serialization failure (SQLSTATE
// 40001) rolled the transaction back.
func (m *myBackend) retryable(err error) bool {
	var my *mysql.MySQLError
	return errors.As(err, &my) && (my.Number == erDeadlock || string(my.SQLState[:]) == "40001")
}

func (m *myBackend) setPaused(ctx context.Context, q Queue, paused bool) error {
	_, err := m.db.ExecContext(ctx, "UPDATE queuegen_queues SET paused = ? WHERE name = ?", paused, q.Name)
	return err
}

// myBatch is a batch of Apply on MySQL.
type myBatch struct {
	m     *myBackend
	tx    *sql.Tx
	q     Queue
	table string
}

func (b *myBatch) lock(ctx context.Context, ids []int64, action Action) ([]candidate, error) {
	rows, err := b.tx.QueryContext(ctx, "SELECT id, unique_key FROM "+b.table+" WHERE id IN ("+placeholders(len(ids))+") AND "+
		applicable[action].my+" ORDER BY id FOR UPDATE SKIP LOCKED", anys(ids)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cands []candidate
	for rows.Next() {
		var c candidate
		if err := rows.Scan(&c.id, &c.key); err != nil {
			return nil, err
		}
		cands = append(cands, c)
	}
	return cands, rows.Err()
}

func (b *myBatch) matching(ctx context.Context, ids []int64, action Action) ([]int64, error) {
	return collectIDs(ctx, b.tx, "SELECT id FROM "+b.table+" WHERE id IN ("+placeholders(len(ids))+") AND "+
		applicable[action].my+" ORDER BY id", anys(ids)...)
}

// holders reads, in a queue with unique keys, the unique index itself:
// unique_active is the key of an unfinished job.
func (b *myBatch) holders(ctx context.Context, keys []string, ids []int64) (map[string]int64, error) {
	var active int
	err := b.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'unique_active'`, b.q.Table).Scan(&active)
	if err != nil {
		return nil, err
	}
	key, unfinished := "unique_active", ""
	if active == 0 {
		key, unfinished = "unique_key", " AND state IN ('available', 'running')"
	}
	rows, err := b.tx.QueryContext(ctx, "SELECT "+key+", MAX(id) FROM "+b.table+" WHERE "+key+" IN ("+placeholders(len(keys))+")"+unfinished+
		" AND id NOT IN ("+placeholders(len(ids))+") GROUP BY "+key, append(anys(keys), anys(ids)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanHolders(rows)
}

// change changes the rows lock locked: they are this transaction's, in a
// state the action applies to, so each one changes. (MySQL assigns left
// to right: no assignment reads a column an earlier one set.)
func (b *myBatch) change(ctx context.Context, action Action, ids []int64) ([]int64, error) {
	in := " WHERE id IN (" + placeholders(len(ids)) + ")"
	args := anys(ids)
	var stmt string
	switch action {
	case Retry:
		stmt = "UPDATE " + b.table + ` SET state = 'available', run_after = UTC_TIMESTAMP(6), finished_at = NULL,
    locked_by = NULL, locked_until = NULL, max_attempts = GREATEST(max_attempts, attempt + 1)` + in
	case Cancel:
		stmt = "UPDATE " + b.table + ` SET state = 'dead', finished_at = UTC_TIMESTAMP(6), locked_by = NULL, locked_until = NULL,
    errors = JSON_ARRAY_APPEND(errors, '$', ?)` + in
		args = append([]any{cancelled}, args...)
	case Purge:
		stmt = "DELETE FROM " + b.table + in
	default:
		return nil, fmt.Errorf("unknown action %q", action)
	}
	if _, err := b.tx.ExecContext(ctx, stmt, args...); err != nil {
		return nil, err
	}
	return slices.Clone(ids), nil
}

func (b *myBatch) commit(context.Context) error { return b.tx.Commit() }

func (b *myBatch) rollback(context.Context) { b.tx.Rollback() }

// querier is a *sql.DB or *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func collectIDs(ctx context.Context, db querier, query string, args ...any) ([]int64, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids := []int64{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
