package cli_test

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
)

// The operations tests that are about MySQL alone: its address forms, the
// --schema it has no use for, and its column types in payloads. The tests
// of the operations' behaviour run on both engines, in ops_test.go.

// opsMySQLURL is dsn, a go-sql-driver DSN, as a mysql:// URL.
func opsMySQLURL(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u := url.URL{Scheme: "mysql", User: url.User(cfg.User), Host: cfg.Addr, Path: "/" + cfg.DBName}
	if cfg.Passwd != "" {
		u.User = url.UserPassword(cfg.User, cfg.Passwd)
	}
	return u.String()
}

// TestOpsMySQLAddresses: every operation takes a MySQL database as a
// mysql:// URL or a go-sql-driver DSN; --schema, meaningless there, is
// refused; an unreachable server is said once, without its password.
func TestOpsMySQLAddresses(t *testing.T) {
	t.Parallel()
	d := seededOn(t, dburl.MySQL)
	for _, db := range []string{d.url, opsMySQLURL(t, d.url)} {
		code, out, errs := run(t, "stats", "--db", db)
		if code != 0 || !strings.Contains(out, "email ") || !strings.Contains(out, "statement ") {
			t.Errorf("stats --db %s = %d:\n%s%s", db, code, out, errs)
		}
		for _, cmd := range [][]string{
			{"jobs", "--queue", "email"}, {"pause", "--queue", "email"}, {"resume", "--queue", "email"},
			{"retry", "--queue", "email", "--state", "dead", "--yes"}, {"cancel", "--queue", "email", "--state", "scheduled"},
			{"purge", "--queue", "email", "--state", "succeeded"},
		} {
			if code, out, errs := run(t, append(cmd, "--db", db)...); code != 0 {
				t.Errorf("%v --db %s = %d:\n%s%s", cmd, db, code, out, errs)
			}
		}
	}
	if code, _, errs := run(t, "stats", "--db", d.url, "--schema", "jobs"); code != 2 || !strings.Contains(errs, "--schema jobs: MySQL and MariaDB have no schemas; the database --db names holds the queues") {
		t.Errorf("stats --schema on MySQL = %d, %q", code, errs)
	}
	if code, _, errs := run(t, "jobs", "--db", opsMySQLURL(t, d.url), "--queue", "email", "--schema", "public"); code != 2 || !strings.Contains(errs, "have no schemas") {
		t.Errorf("jobs --schema on MySQL = %d, %q", code, errs)
	}
	code, _, errs := run(t, "stats", "--db", "mysql://nobody:s3cret@127.0.0.1:1/app?timeout=2s")
	if code != 1 || strings.Count(errs, "cannot connect to the database") != 1 || strings.Count(errs, "\n") != 1 || strings.Contains(errs, "s3cret") {
		t.Errorf("an unreachable server = %d, %q", code, errs)
	}
	// An empty database: no registry, with the hint.
	empty := dbtest.New(t, dburl.MySQL).Address
	if code, _, errs := run(t, "stats", "--db", empty); code != 1 || !strings.Contains(errs, "no queue registry in database qg_") || !strings.Contains(errs, "queuegen migrate up") {
		t.Errorf("stats of a database without queues = %d, %q", code, errs)
	}
}

// TestOpsMySQLRegistryNames: a table name in the registry is used only as
// a plain identifier; anything else is refused, never spliced into SQL.
func TestOpsMySQLRegistryNames(t *testing.T) {
	t.Parallel()
	d := seededOn(t, dburl.MySQL)
	d.exec(t, "UPDATE queuegen_queues SET table_name = ? WHERE name = 'statement'", "email_queue`; DROP TABLE email_queue; --")
	want := "queue statement: the registry names its table \"email_queue`; DROP TABLE email_queue; --\", which is not a plain identifier"
	for _, cmd := range [][]string{{"stats"}, {"jobs", "--queue", "statement"}, {"purge", "--queue", "statement", "--state", "all", "--yes"}} {
		if code, _, errs := run(t, append(cmd, "--db", d.url)...); code != 1 || !strings.Contains(errs, want) || strings.Count(errs, "queue statement:") != 1 {
			t.Errorf("%v with a hostile table name = %d, %q", cmd, code, errs)
		}
	}
	if n := d.one(t, "SELECT count(*) FROM email_queue"); n != 8 {
		t.Errorf("email_queue has %d jobs, want its 8", n)
	}
}

// TestJobsPayloadsAlikeOnBothEngines: a job's payload columns of every
// type both engines take read the same in jobs --json on either, keyed in
// the same order.
func TestJobsPayloadsAlikeOnBothEngines(t *testing.T) {
	t.Parallel()
	payloads := map[string]map[string]json.RawMessage{}
	orders := map[string][]string{}
	for _, engine := range []string{dburl.PostgreSQL, dburl.MySQL} {
		var d *opsDB
		insert := `INSERT INTO typed_queue (c_text, c_varchar, c_smallint, c_integer, c_bigint, c_boolean, c_numeric, c_real, c_double,
    c_uuid, c_timestamptz, c_date, c_jsonb, c_bytea, n_boolean, n_double, n_uuid, max_attempts, created_at, run_after%s)
VALUES (?, 'v', -2, 70000, 9007199254740993, ?, 12.5, 0.25, 1.5e-7, '6f1b1f5c-3a3e-4f5e-9a4c-0c8a7b0e1d2f', ?, '2024-05-01',
    ?, ?, ?, NULL, NULL, 3, {now}, {now}%s)`
		args := []any{"it's \"quoted\" \\ and\nmultiline ✓", true, time.Date(2024, 5, 1, 12, 30, 45, 123456000, time.UTC),
			`{"b": [1, 2.5, null], "a": {"x": "y"}}`, []byte{0, 0xff, 0x10}, false}
		if engine == dburl.PostgreSQL {
			url, _ := seeded(t)
			d = &opsDB{engine: engine, url: url, db: opsOpen(t, url)}
			insert = strings.Replace(insert, "%s", ", c_text_array, c_int_array", 1)
			insert = strings.Replace(insert, "%s", ", '{a}', '{1}'", 1)
		} else {
			d = &opsDB{engine: engine, url: opsMigrated(t, "../../integration/e2e/mysql/db/migrations")}
			d.db = opsOpen(t, d.url)
			insert = strings.ReplaceAll(insert, "%s", "")
		}
		id := d.insert(t, insert, args...)
		code, out, errs := run(t, "jobs", "--db", d.url, "--queue", "typed", "--id", itoa(id), "--json")
		var job struct {
			Payload json.RawMessage `json:"payload"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &job) != nil {
			t.Fatalf("%s: jobs --id --json = %d:\n%s%s", engine, code, out, errs)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(job.Payload, &fields); err != nil {
			t.Fatal(err)
		}
		payloads[engine] = fields
		orders[engine] = opsKeyOrder(t, job.Payload)
	}
	pg, my := payloads[dburl.PostgreSQL], payloads[dburl.MySQL]
	var common []string
	for _, k := range orders[dburl.MySQL] {
		if _, ok := pg[k]; ok {
			common = append(common, k)
			if a, b := opsCompact(string(pg[k])), opsCompact(string(my[k])); a != b {
				t.Errorf("payload %s: %s on PostgreSQL, %s on MySQL", k, a, b)
			}
		}
	}
	if len(common) != 22 {
		t.Errorf("%d columns common to both typed queues, want 22: %v", len(common), common)
	}
	var pgCommon []string
	for _, k := range orders[dburl.PostgreSQL] {
		if slices.Contains(common, k) {
			pgCommon = append(pgCommon, k)
		}
	}
	if !slices.Equal(pgCommon, common) {
		t.Errorf("payload keys in order:\nPostgreSQL %v\nMySQL      %v", pgCommon, common)
	}
	// The forms, as Job.Payload documents them.
	for k, want := range map[string]string{"c_boolean": "true", "n_boolean": "false", "c_bytea": `"\\x00ff10"`, "c_date": `"2024-05-01"`,
		"c_timestamptz": `"2024-05-01T12:30:45.123456+00:00"`, "c_numeric": "12.500", "c_bigint": "9007199254740993",
		"c_jsonb": `{"a":{"x":"y"},"b":[1,2.5,null]}`, "n_uuid": "null", "c_double": "0.00000015", "c_real": "0.25"} {
		if got := opsCompact(string(my[k])); got != want {
			t.Errorf("MySQL payload %s = %s, want %s", k, got, want)
		}
	}
}

// opsKeyOrder lists the keys of a JSON object in the order they are written.
func opsKeyOrder(t *testing.T, doc json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestJobsShowsMySQLPayloads: jobs shows a MySQL job whole, its base and
// payload columns with their defaults, and lists it cut short.
func TestJobsShowsMySQLPayloads(t *testing.T) {
	t.Parallel()
	d := seededOn(t, dburl.MySQL)
	id := d.insert(t, `INSERT INTO email_queue (recipient, subject, attachment, amount, urgent, meta, tenant_id, priority, unique_key, max_attempts, created_at, run_after)
VALUES ('ada@example.com', 'Hi', X'cafe', 12.5, TRUE, JSON_OBJECT('k', JSON_ARRAY(1, 2)), 42, 3, 'key-1', 5, {now}, {now} + INTERVAL 1 DAY)`)
	code, out, errs := run(t, "jobs", "--db", d.url, "--queue", "email", "--id", itoa(id))
	for _, want := range []string{"job " + itoa(id) + " of queue email\n", "  state         scheduled\n", "  attempt       0 of 5\n", "  priority      3\n",
		"  attempted at  -\n", "  unique key    key-1\n", `"ref": "`, `"body": "Hello;\nit's a \\ test -- really"`, `"meta": {`, `"ratio": 0.5`,
		`"small": 3`, `"amount": 12.50`, `"region": "eu"`, `"urgent": true`, `"weight": null`, `"sent_on": null`, `"tenant_id": 42`,
		`"attachment": "\\xcafe"`, "  errors        0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("jobs --id lacks %q:\n%s%s", want, out, errs)
		}
	}
	if code != 0 {
		t.Errorf("jobs --id = %d", code)
	}
	code, out, _ = run(t, "jobs", "--db", d.url, "--queue", "email", "--state", "scheduled")
	if code != 0 || !regexp.MustCompile(`(?m)^`+itoa(id)+`\s+scheduled\s+0/5\s`).MatchString(out) || !strings.Contains(out, `{"ref":"`) || !strings.Contains(out, "2 jobs of queue email (state scheduled)") {
		t.Errorf("jobs --state scheduled = %d:\n%s", code, out)
	}
	if code, out, _ := run(t, "jobs", "--db", d.url, "--queue", "email", "--state", "nonsense"); code != 2 {
		t.Errorf("jobs --state nonsense = %d:\n%s", code, out)
	}
}

// TestLargePurgeShowsProgressMySQL is TestLargePurgeShowsProgress on
// MySQL: an action on more jobs than one batch runs in batches (each one
// transaction, its ids bound parameters) and reports each on stderr.
func TestLargePurgeShowsProgressMySQL(t *testing.T) {
	t.Parallel()
	d := seededOn(t, dburl.MySQL)
	digits := "(SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	d.exec(t, `INSERT INTO email_queue (recipient, max_attempts, state, finished_at, created_at, run_after)
SELECT 'old', 3, 'dead', {now}, {now}, {now} FROM `+digits+` a, `+digits+` b, `+digits+` c, `+digits+` d, `+digits+` e LIMIT 25000`)
	code, out, errs := run(t, "purge", "--db", d.url, "--queue", "email", "--state", "dead", "--yes")
	if code != 0 || !strings.Contains(out, "purged 25002 jobs") || !strings.Contains(errs, "purge: 10000 of 25002 jobs\npurge: 20000 of 25002 jobs\npurge: 25002 of 25002 jobs\n") {
		t.Errorf("a large purge = %d:\n%s\nstderr:\n%s", code, out, errs)
	}
	if n := d.one(t, "SELECT count(*) FROM email_queue"); n != 6 {
		t.Errorf("%d jobs left, want the 6 not dead", n)
	}
}
