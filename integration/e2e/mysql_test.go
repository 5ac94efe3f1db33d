package e2e_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/queuegen/queuegen/integration/e2e/mysql/myjobs"
	"github.com/queuegen/queuegen/integration/e2e/payload"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/mytest"
	"github.com/queuegen/queuegen/queue"
	"github.com/queuegen/queuegen/queue/queueimpl"
)

// MySQL's own mappings: its column types and defaults, the plans of its
// claims, and its clock. The behaviours both engines share are in the
// suites that run on each (eachEngine).

// mysqlDB is a fresh migrated MySQL database. (The MySQL-only tests are
// left out of the run through PgBouncer: see TestMain.)
func mysqlDB(t *testing.T) *sql.DB {
	t.Helper()
	t.Parallel()
	return open(t, dburl.MySQL).db.SQL
}

// TestMySQLEveryColumnTypeRoundTrips pushes a payload of every type MySQL
// takes, with nulls and without, and reads it back unchanged.
func TestMySQLEveryColumnTypeRoundTrips(t *testing.T) {
	db := mysqlDB(t)
	ctx := context.Background()
	q := myjobs.NewTypedQueue(db)
	ts := time.Date(2026, 11, 22, 10, 30, 0, 123456000, time.UTC)
	date := time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC)
	full := myjobs.TypedPayload{
		CText: "héllo 'quoted' \\ 😀; DROP TABLE typed_queue; --", CVarchar: "ten chars!",
		CSmallint: -32768, CInteger: 2147483647, CBigint: -9223372036854775808, CBoolean: true,
		CNumeric: "-12345.678", CReal: 1.5, CDouble: -2.25e300, CUUID: "0b9a6c1e-3f5d-4c2b-9a8e-7d6c5b4a3f2e",
		CTimestamptz: ts, CDate: date, CJsonb: json.RawMessage(`{"k": [1, "two", null]}`), CBytea: []byte{0, 1, 2, 255},
		NText: ptr("n"), NInteger: ptr(int32(-1)), NBoolean: ptr(false), NReal: ptr(float32(-0.25)), NDouble: ptr(0.5),
		NNumeric: ptr("123.45"), NTimestamptz: &ts, NDate: &date, NUUID: ptr("0b9a6c1e-3f5d-4c2b-9a8e-7d6c5b4a3f2f"),
		NJsonb: ptr(json.RawMessage(`[]`)), NBytea: []byte("x"),
	}
	// Left unset: a nil NOT NULL bytea goes in empty, a nil NOT NULL JSON
	// as the document null; nullable fields stay NULL.
	empty := myjobs.TypedPayload{CTimestamptz: ts, CDate: date, CNumeric: "0.000", CUUID: "0b9a6c1e-3f5d-4c2b-9a8e-7d6c5b4a3f2e"}
	for name, p := range map[string]myjobs.TypedPayload{"full": full, "nulls and empties": empty} {
		res, err := q.Push(ctx, p)
		if err != nil {
			t.Fatalf("%s: Push: %v", name, err)
		}
		got, err := q.Get(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		// JSON is normalised by the server; compare it as JSON.
		deref := func(d *json.RawMessage) json.RawMessage {
			if d == nil {
				return nil
			}
			return *d
		}
		if (p.NJsonb == nil) != (got.Payload.NJsonb == nil) {
			t.Errorf("%s: nullable JSON %v, want %v", name, got.Payload.NJsonb, p.NJsonb)
		}
		for _, pair := range [][2]json.RawMessage{{p.CJsonb, got.Payload.CJsonb}, {deref(p.NJsonb), deref(got.Payload.NJsonb)}} {
			var want, have any
			json.Unmarshal(pair[0], &want)
			json.Unmarshal(pair[1], &have)
			if diff := cmp.Diff(want, have); diff != "" {
				t.Errorf("%s: JSON (-want +got):\n%s", name, diff)
			}
		}
		got.Payload.CJsonb, got.Payload.NJsonb, p.CJsonb, p.NJsonb = nil, nil, nil, nil
		p.CBytea = queueimpl.EmptyIfNil(p.CBytea)
		if diff := cmp.Diff(p, got.Payload, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
			t.Errorf("%s: payload round trip (-want +got):\n%s", name, diff)
		}
	}
}

// TestMySQLColumnDefaults: a field whose column has a default, left
// unset, gets the default the migration declared, in Push and in PushMany
// (with RunAfter and without); set, it keeps its value. The clock default
// is UTC, and a text default with quotes, a backslash, a semicolon, a
// line break and "--" is stored exactly.
func TestMySQLColumnDefaults(t *testing.T) {
	db := mysqlDB(t)
	ctx := context.Background()
	q := myjobs.NewImageQueue(db)
	before := time.Now().Add(-time.Minute)
	check := func(name string, j myjobs.ImagePayload, set bool) {
		t.Helper()
		if set {
			if *j.Format != "png" || *j.Quality != 95 || *j.Label != "mine" || *j.Note != "n" {
				t.Errorf("%s: set fields changed: %+v", name, j)
			}
			return
		}
		if *j.Format != "webp" || *j.Quality != 80 || *j.Ratio != "1.50" || *j.Label != "untitled" ||
			*j.Note != "it's; \\ a\nline -- end" || j.TakenAt.Before(before) || j.TakenAt.After(time.Now().Add(time.Minute)) ||
			len(*j.Ref) != 36 || string(j.Meta) != "null" {
			t.Errorf("%s: unset fields did not get their defaults: format %q quality %d ratio %q label %q note %q taken %v ref %q meta %s",
				name, *j.Format, *j.Quality, *j.Ratio, *j.Label, *j.Note, j.TakenAt, *j.Ref, j.Meta)
		}
	}
	setPayload := func() myjobs.ImagePayload {
		return myjobs.ImagePayload{URL: "u", Format: ptr("png"), Quality: ptr(int32(95)), Label: ptr("mine"), Note: ptr("n"), Meta: json.RawMessage(`{}`)}
	}
	res, err := q.Push(ctx, myjobs.ImagePayload{URL: "u"})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := q.Get(ctx, res.ID)
	check("Push, unset", j.Payload, false)
	res, err = q.Push(ctx, setPayload())
	if err != nil {
		t.Fatal(err)
	}
	j, _ = q.Get(ctx, res.ID)
	check("Push, set", j.Payload, true)

	for _, at := range []bool{false, true} {
		if _, err := db.Exec("DELETE FROM image_queue"); err != nil {
			t.Fatal(err)
		}
		batch := []myjobs.ImagePayload{{URL: "a"}, setPayload(), {URL: "b"}, setPayload()}
		var err error
		if at {
			_, err = q.PushMany(ctx, batch, queue.RunAfter(time.Now().Add(-time.Second)))
		} else {
			_, err = q.PushMany(ctx, batch)
		}
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := q.Claim(ctx, "n", 10)
		if err != nil || len(claimed) != 4 {
			t.Fatalf("claimed %d, %v", len(claimed), err)
		}
		refs := map[string]bool{}
		for _, c := range claimed {
			check("PushMany", c.Payload, c.Payload.URL == "u")
			refs[*c.Payload.Ref] = true
		}
		if len(refs) != 4 {
			t.Errorf("UUID() gave %d distinct values to 4 jobs", len(refs))
		}
	}
}

// TestMySQLPushManyAcrossStatements: a batch larger than one statement
// holds is split, and its statements run in one transaction: all jobs
// are inserted, or (when one fails) none.
func TestMySQLPushManyAcrossStatements(t *testing.T) {
	db := mysqlDB(t)
	ctx := context.Background()
	q := myjobs.NewTypedQueue(db)
	ps := make([]myjobs.TypedPayload, 2500) // three statements of 1000 rows at most
	for i := range ps {
		ps[i] = myjobs.TypedPayload{CText: fmt.Sprint(i), CNumeric: "1", CUUID: "u", CTimestamptz: time.Now(), CDate: time.Now()}
	}
	if n, err := q.PushMany(ctx, ps); err != nil || n != 2500 {
		t.Fatalf("PushMany = %d, %v; want 2500", n, err)
	}
	// A value too long for its column fails the third statement: the first
	// two are rolled back with it.
	ps[2400].CVarchar = "eleven chars"
	if _, err := q.PushMany(ctx, ps); err == nil {
		t.Fatal("PushMany of a value too long for varchar(10) succeeded")
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM typed_queue").Scan(&n); err != nil || n != 2500 {
		t.Errorf("%d jobs after the failed batch, %v; want the first batch's 2500 only", n, err)
	}
}

// TestMySQLClaimPlans runs EXPLAIN on the claims and the maintenance
// statements sqlc compiled, on tables with many finished rows: each reads
// its index in order, with no sort of a queue table's rows. (Under FOR
// UPDATE SKIP LOCKED a sort would lock every row it read, and concurrent
// claimers would deadlock.) The fair claims read the fair index and sort
// only the few ids they picked, in a derived table, before locking.
func TestMySQLClaimPlans(t *testing.T) {
	db := mysqlDB(t)
	ctx := context.Background()
	ps := make([]payload.Task, 5000)
	for i := range ps {
		ps[i] = payload.Task{Name: "x", N: i}
	}
	myjobs.NewTaskQueue(db).PushMany(ctx, ps)
	myjobs.NewTxtaskQueue(db).PushMany(ctx, ps)
	myjobs.NewKeptQueue(db).PushMany(ctx, ps)
	// The fair queues: 100 tenants.
	fps, txps := make([]myjobs.FairPayload, 5000), make([]myjobs.TxfairPayload, 5000)
	for i := range fps {
		fps[i] = myjobs.FairPayload{Tenant: fmt.Sprint("t", i%100), N: int32(i)}
		txps[i] = myjobs.TxfairPayload{Tenant: fmt.Sprint("t", i%100), N: int32(i)}
	}
	myjobs.NewFairQueue(db).PushMany(ctx, fps)
	myjobs.NewTxfairQueue(db).PushMany(ctx, txps)
	// The limited queues: 100 tenants, and capped's jobs.
	lps, cps := make([]myjobs.LimitedPayload, 5000), make([]myjobs.CappedPayload, 5000)
	for i := range lps {
		lps[i] = myjobs.LimitedPayload{Tenant: fmt.Sprint("t", i%100), N: int32(i)}
		cps[i] = myjobs.CappedPayload{N: int32(i)}
	}
	myjobs.NewLimitedQueue(db).PushMany(ctx, lps)
	myjobs.NewCappedQueue(db).PushMany(ctx, cps)
	// The rate-limited queues: 100 tenants, and paced's jobs.
	tps, pps := make([]myjobs.ThrottledPayload, 5000), make([]myjobs.PacedPayload, 5000)
	for i := range tps {
		tps[i] = myjobs.ThrottledPayload{Tenant: fmt.Sprint("t", i%100), N: int32(i)}
		pps[i] = myjobs.PacedPayload{N: int32(i)}
	}
	myjobs.NewThrottledQueue(db).PushMany(ctx, tps)
	myjobs.NewPacedQueue(db).PushMany(ctx, pps)
	for _, table := range []string{"task_queue", "txtask_queue", "kept_queue", "fair_queue", "txfair_queue", "limited_queue", "capped_queue", "throttled_queue", "paced_queue"} {
		// Most jobs finished, a few running, as in a queue that keeps them.
		for _, stmt := range []string{
			"UPDATE %s SET priority = id %% 3, state = 'succeeded', finished_at = UTC_TIMESTAMP(6) WHERE id %% 50 > 1",
			"UPDATE %s SET state = 'running', locked_by = 'n', locked_until = UTC_TIMESTAMP(6) WHERE id %% 50 = 1",
			"ANALYZE TABLE %s",
		} {
			if _, err := db.Exec(fmt.Sprintf(stmt, table)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Their rate logs hold 2,000 claims each, a millisecond apart, the
	// last just now: throttled's window (1s) holds half, paced's (500ms) a
	// quarter.
	for _, stmt := range []string{
		`INSERT INTO throttled_queue_rate (claimed_at, tenant, jobs)
		 SELECT UTC_TIMESTAMP(6) - INTERVAL id * 1000 MICROSECOND, CONCAT('t', id % 100), 1 FROM throttled_queue WHERE id <= 2000`,
		`INSERT INTO paced_queue_rate (claimed_at, jobs)
		 SELECT UTC_TIMESTAMP(6) - INTERVAL id * 1000 MICROSECOND, 1 FROM paced_queue WHERE id <= 2000`,
		"ANALYZE TABLE throttled_queue_rate, paced_queue_rate",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	// The prunes' times count from each log's own last claim, not from
	// the clock when the EXPLAINs run, nor from the other log's (the two
	// were filled by two statements, at two times): on a loaded machine
	// seconds may pass in between, and a prune of most rows would rightly
	// scan the log.
	var logged, throttledLogged time.Time
	if err := db.QueryRow("SELECT MAX(claimed_at) FROM paced_queue_rate").Scan(&logged); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT MAX(claimed_at) FROM throttled_queue_rate").Scan(&throttledLogged); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file, query string
		args        []any
		index       string
	}{
		{"task.sql.go", "ClaimExpiredTask", []any{nil, 10}, "task_queue_lease_idx"},
		{"task.sql.go", "ClaimDueTask", []any{nil, 10}, "task_queue_claim_idx"},
		{"txtask.sql.go", "ClaimTxtask", []any{nil, 10}, "txtask_queue_claim_idx"},
		{"kept.sql.go", "ClaimDueKept", []any{nil, 10}, "kept_queue_claim_idx"},
		// The fair claims: parameters max, now (three times), the sole
		// value's limit, now, limit.
		{"fair.sql.go", "ClaimDueFair", []any{10, nil, nil, nil, 10, nil, 10}, "fair_queue_fair_idx"},
		{"txfair.sql.go", "ClaimTxfair", []any{10, nil, nil, nil, 10, nil, 10}, "txfair_queue_fair_idx"},
		// The fair claims' seeks (shares of FairSeekShare and more): the
		// values, a dive into the fair index each; then a value's share,
		// a range read of the fair index in claim order, locked as it is
		// read.
		{"fair.sql.go", "FirstFairKeyFair", []any{nil}, "fair_queue_fair_idx"},
		{"fair.sql.go", "NextFairKeyFair", []any{"t1", nil}, "fair_queue_fair_idx"},
		{"fair.sql.go", "ClaimKeyFair", []any{"t1", nil, 10}, "fair_queue_fair_idx"},
		{"txfair.sql.go", "FirstFairKeyTxfair", []any{nil}, "txfair_queue_fair_idx"},
		{"txfair.sql.go", "NextFairKeyTxfair", []any{"t1", nil}, "txfair_queue_fair_idx"},
		{"txfair.sql.go", "ClaimKeyTxfair", []any{"t1", nil, 10}, "txfair_queue_fair_idx"},
		// The limited claims: the lock (the registry row, by primary
		// key), the global count, and the claims, whose per-key count
		// reads the fair index too (every line of the limited claim's
		// plan is checked below).
		{"limited.sql.go", "LockClaimsLimited", nil, "PRIMARY"},
		{"limited.sql.go", "BusyLimited", []any{nil, nil}, "limited_queue_lease_idx"},
		{"limited.sql.go", "ClaimDueLimited", []any{10, nil, nil, nil, nil, nil, 10}, "limited_queue_fair_idx"},
		{"capped.sql.go", "BusyCapped", []any{nil, nil}, "capped_queue_lease_idx"},
		{"capped.sql.go", "ClaimDueCapped", []any{nil, 10}, "capped_queue_claim_idx"},
		// The rate-limited claims: the window's count, for the queue
		// (paced) or per value in the fair walk (throttled, whose plan
		// is checked like limited's), and the log's prune.
		{"paced.sql.go", "RecentPaced", []any{nil}, "paced_queue_rate_claimed_at_idx"},
		{"paced.sql.go", "ClaimDuePaced", []any{nil, 10}, "paced_queue_claim_idx"},
		// A prune deletes the few rows that left the window since the
		// claim before: here the oldest 100.
		{"paced.sql.go", "PruneClaimsPaced", []any{logged.Add(500*time.Millisecond - 1900*time.Millisecond)}, "paced_queue_rate_claimed_at_idx"},
		{"throttled.sql.go", "ClaimDueThrottled", []any{10, nil, nil, nil, nil, nil, 10}, "throttled_queue_fair_idx"},
		{"throttled.sql.go", "ClaimDueThrottled", []any{10, nil, nil, nil, nil, nil, 10}, "throttled_queue_rate_tenant_idx"},
		{"throttled.sql.go", "PruneClaimsThrottled", []any{throttledLogged.Add(time.Second - 1900*time.Millisecond)}, "throttled_queue_rate_claimed_at_idx"},
		{"task.sql.go", "DoomedTask", []any{10}, "task_queue_lease_idx"},
		{"task.sql.go", "ReleaseNodeTask", []any{"n"}, "task_queue_lease_idx"},
		{"kept.sql.go", "PurgeKept", []any{3600000000, 7200000000, 10}, "kept_queue_finished_idx"},
	} {
		stmt := querySQL(t, "mysql/myjobs/myjobsdb/"+c.file, c.query)
		rows, err := db.QueryContext(ctx, "EXPLAIN "+stmt, c.args...)
		if err != nil {
			t.Fatalf("EXPLAIN %s: %v", c.query, err)
		}
		cols, _ := rows.Columns()
		var plan []string
		usesIndex, looseScan := false, false
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			line := map[string]string{}
			for i, col := range cols {
				line[col] = vals[i].String
			}
			plan = append(plan, fmt.Sprint(line))
			if line["key"] == c.index {
				usesIndex = true
			}
			if strings.Contains(line["Extra"], "Using index for group-by") {
				looseScan = true
			}
			// A fair claim sorts the ids it picked (a derived table, no
			// queue table's rows) before it reads and locks the jobs.
			if strings.Contains(line["Extra"], "filesort") && !strings.HasPrefix(line["table"], "<derived") {
				t.Errorf("%s sorts (under a lock, a sort locks every row it reads): %v", c.query, line)
			}
			// No step of a limited claim scans a queue table: the per-key
			// count (held) reads the fair index like the walk.
			if (c.query == "ClaimDueLimited" || c.query == "ClaimDueThrottled") && line["type"] == "ALL" && !strings.HasPrefix(line["table"], "<") {
				t.Errorf("%s scans %s: %v", c.query, line["table"], line)
			}
			// The per-key count (held) reads the running jobs once,
			// grouped by value: not once a value (a dependent subquery,
			// or MariaDB's lateral derived table).
			if line["table"] == "held" && (strings.Contains(line["select_type"], "DEPENDENT") || strings.Contains(line["select_type"], "LATERAL")) {
				t.Errorf("%s counts each value's running jobs apart: %v", c.query, line)
			}
			// A value is one dive into the fair index, and a value's share
			// a range of it, read in its order.
			if (strings.Contains(c.query, "FairKey") || strings.HasPrefix(c.query, "ClaimKey")) && line["type"] != "range" && line["type"] != "ref" {
				t.Errorf("%s does not read a range of the fair index: %v", c.query, line)
			}
			if testing.Verbose() {
				t.Logf("%s: %v", c.query, line)
			}
		}
		rows.Close()
		if !usesIndex {
			t.Errorf("%s does not read %s: %v", c.query, c.index, plan)
		}
		// A limited fair claim finds the values with a due job by a loose
		// index scan, one dive a value (with the earliest run_after read
		// in the same dive), not by reading every available entry.
		if (c.query == "ClaimDueLimited" || c.query == "ClaimDueThrottled") && !looseScan {
			t.Errorf("%s reads the values without a loose index scan: %v", c.query, plan)
		}
	}
}

// TestMySQLTimesAreUTC: the clock of every statement is UTC_TIMESTAMP, so
// a session whose time zone is not UTC stores and compares the same times:
// a job pushed now is due now and a delayed one is not, and created_at is
// the instant of the push.
func TestMySQLTimesAreUTC(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t, dburl.MySQL)
	dsn := e.db.Address + "&time_zone=%27%2B05%3A30%27"
	db := mytest.Open(t, dsn)
	var tz string
	if err := db.QueryRow("SELECT @@session.time_zone").Scan(&tz); err != nil || tz != "+05:30" {
		t.Fatalf("session time zone %q, %v", tz, err)
	}
	q := myjobs.NewTaskQueue(db)
	now, _ := q.Push(ctx, task("now"))
	later, _ := q.Push(ctx, task("later"), queue.Delay(time.Hour))
	got, err := q.Claim(ctx, "n", 10)
	if err != nil || len(got) != 1 || got[0].ID != now.ID {
		t.Fatalf("claim = %v, %v; want the job pushed now, not the delayed one", got, err)
	}
	if d := time.Since(got[0].CreatedAt); d < -time.Minute || d > time.Minute {
		t.Errorf("created_at is %v from now", -d)
	}
	l, _ := q.Get(ctx, later.ID)
	if d := time.Until(l.RunAfter); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("the delayed job is due in %v, want an hour", d)
	}
}
