package cli_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
)

// engineSpec is specIn("public") for engine: its engine key, and no
// schema on MySQL; on Citus no schema (the test's schema is the URL's
// search_path) and queue ping distributed.
func engineSpec(engine string) string {
	text := specIn("public")
	switch engine {
	case dburl.MySQL:
		text = strings.Replace(text, "schema: public\n", "engine: mysql\n", 1)
	case dbtest.Citus:
		text = strings.Replace(strings.Replace(text, "schema: public\n", "", 1), "  - name: ping\n", "  - name: ping\n"+citusQueue, 1)
	}
	return text
}

// citusQueue are the keys that distribute a queue of a test's spec.
const citusQueue = "    inherits: false\n    distribute: {buckets: 8}\n"

// queueSpec is the spec of one more queue name with a column n, for
// engine: distributed on Citus.
func queueSpec(engine, name string) string {
	text := "  - name: " + name + "\n    payload: {columns: {n: integer}}\n"
	if engine == dbtest.Citus {
		text += citusQueue
	}
	return text
}

// respec rewrites the spec at path and generates it.
func respec(t *testing.T, path, text string, flags ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, append([]string{"generate", "-f", path}, flags...)...); code != 0 {
		t.Fatalf("generate = %d:\n%s%s", code, out, errs)
	}
}

// pushSQL inserts a job into a queue table, as a push does, on any
// engine (on Citus with its bucket and id, see dbtest.CitusInsert).
func pushSQL(engine, table string) string {
	stmt := "INSERT INTO " + table + " (max_attempts, run_after, created_at, n) VALUES (3, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, 1)"
	if engine == dbtest.Citus {
		stmt = dbtest.CitusInsert(stmt)
	}
	return stmt
}

func count(t *testing.T, db *sql.DB, query string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestMigrateDownAsksBeforeDroppingJobs: down, down-to, redo and reset
// refuse, without --yes, to run a down step that drops a queue table
// holding jobs, naming each table and its count, and change nothing;
// empty tables need no consent; --yes goes ahead. On every engine.
func TestMigrateDownAsksBeforeDroppingJobs(t *testing.T) {
	for _, engine := range dbtest.AndCitus(dbtest.Engines) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			spec := project(t, engineSpec(engine))
			respec(t, spec, engineSpec(engine)+queueSpec(engine, "webhook"))
			d := dbtest.New(t, engine)
			if code, out, errs := run(t, "migrate", "up", "--db", d.Address, "-f", spec); code != 0 {
				t.Fatalf("migrate up = %d:\n%s%s", code, out, errs)
			}
			for range 2 {
				d.SQL.Exec(pushSQL(engine, "webhook_queue"))
			}
			for range 3 {
				d.SQL.Exec(pushSQL(engine, "ping_queue"))
			}
			for _, s := range []struct {
				args []string
				want []string
			}{
				{[]string{"down"}, []string{"migrate down would drop a table that holds jobs:\n  webhook_queue 2 jobs (dropped by 00002_create_webhook_queue.sql)"}},
				{[]string{"redo"}, []string{"webhook_queue 2 jobs"}},
				{[]string{"down-to", "1"}, []string{"webhook_queue 2 jobs"}},
				{[]string{"reset"}, []string{"tables that hold jobs:", "  webhook_queue 2 jobs (dropped by 00002_create_webhook_queue.sql)", "  ping_queue    3 jobs (dropped by 00001_queuegen_init.sql)"}},
			} {
				code, out, errs := run(t, append(append([]string{"migrate"}, s.args...), "--db", d.Address, "-f", spec)...)
				ok := code == 1 && strings.Contains(errs, "--yes") && strings.Contains(errs, "Nothing was changed.")
				for _, w := range s.want {
					ok = ok && strings.Contains(errs, w)
				}
				if !ok {
					t.Errorf("migrate %s with jobs in the tables = %d:\n%s%s\nwant a refusal with %q", strings.Join(s.args, " "), code, out, errs, s.want)
				}
				if n := count(t, d.SQL, "SELECT COUNT(*) FROM webhook_queue") + count(t, d.SQL, "SELECT COUNT(*) FROM ping_queue"); n != 5 {
					t.Errorf("after the refused migrate %s: %d jobs, want 5", s.args[0], n)
				}
			}
			if code, out, _ := run(t, "migrate", "version", "--db", d.Address, "-f", spec); code != 0 || out != "2\n" {
				t.Errorf("version after the refusals = %d, %q; want 2", code, out)
			}
			// An empty table needs no consent.
			d.SQL.Exec("DELETE FROM webhook_queue")
			if code, out, errs := run(t, "migrate", "down", "--db", d.Address, "-f", spec); code != 0 || !strings.Contains(out, "down  00002_create_webhook_queue.sql") {
				t.Errorf("migrate down of an empty queue table = %d:\n%s%s", code, out, errs)
			}
			if code, out, errs := run(t, "migrate", "reset", "--yes", "--db", d.Address, "-f", spec); code != 0 || !strings.Contains(out, "down  00001_queuegen_init.sql") {
				t.Errorf("migrate reset --yes = %d:\n%s%s", code, out, errs)
			}
		})
	}
}

// TestSpecAndDatabaseEnginesMustMatch: a spec of one engine with --db of
// another is refused by every command that takes both, naming both
// engines, before anything connects: the database is left without a
// table (no version table).
func TestSpecAndDatabaseEnginesMustMatch(t *testing.T) {
	other := map[string]string{dburl.PostgreSQL: dburl.MySQL, dburl.MySQL: dburl.PostgreSQL}
	title := map[string]string{dburl.PostgreSQL: "PostgreSQL", dburl.MySQL: "MySQL/MariaDB"}
	// Not on Citus (dbtest.AndCitus): a Citus cluster is a PostgreSQL
	// database, whose engine matches a PostgreSQL spec's.
	for _, engine := range dbtest.Engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			spec := project(t, engineSpec(engine))
			d := dbtest.New(t, other[engine])
			for _, cmd := range [][]string{
				{"migrate", "up"}, {"migrate", "status"}, {"migrate", "version"}, {"migrate", "down"}, {"migrate", "reset", "--yes"},
				{"stats"}, {"jobs", "--queue", "ping"}, {"retry", "--queue", "ping", "--state", "dead", "--yes"},
				{"cancel", "--queue", "ping", "--state", "available", "--yes"}, {"purge", "--queue", "ping", "--state", "dead", "--yes"},
				{"pause", "--queue", "ping"}, {"resume", "--queue", "ping"},
			} {
				code, out, errs := run(t, append(cmd, "--db", d.Address, "-f", spec)...)
				want := spec + " is a spec for " + title[engine] + ", but --db names a " + title[other[engine]] + " database"
				if code != 1 || !strings.Contains(errs, want) || !strings.Contains(errs, "Nothing was changed") {
					t.Errorf("%v across engines = %d:\n%s%s\nwant %q", cmd, code, out, errs, want)
				}
			}
			query := "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()"
			if other[engine] == dburl.PostgreSQL {
				query = "SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'"
			}
			if n := count(t, d.SQL, query); n != 0 {
				t.Errorf("the %s database has %d tables after the refusals; want none", other[engine], n)
			}
		})
	}
}

// TestUnfilledManualMigrationIsRefused: the stub generate --manual writes
// fails check and migrate up while it holds its placeholder, saying what
// to write; it does not tell the user to run --manual again; filled in,
// it applies.
func TestUnfilledManualMigrationIsRefused(t *testing.T) {
	for _, engine := range dbtest.AndCitus(dbtest.Engines) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			spec := project(t, engineSpec(engine))
			d := dbtest.New(t, engine)
			if code, out, errs := run(t, "migrate", "up", "--db", d.Address, "-f", spec); code != 0 {
				t.Fatalf("migrate up = %d:\n%s%s", code, out, errs)
			}
			respec(t, spec, strings.Replace(engineSpec(engine), "n: integer", "n: bigint", 1), "--manual")
			stub := filepath.Join(filepath.Dir(spec), "migrations", "00002_manual.sql")
			data, err := os.ReadFile(stub)
			if err != nil {
				t.Fatal(err)
			}
			change := "column n type integer → bigint (for a large queue, add a new column, backfill it in batches, then switch)"
			if engine == dburl.MySQL {
				change = strings.Replace(change, "integer → bigint", "INT → BIGINT", 1)
			}
			if strings.Contains(string(data), "--manual (") || !strings.Contains(string(data), "column n type") {
				t.Errorf("the stub still tells the user to run --manual, or lacks the change:\n%s", data)
			}
			want := []string{"migrations/00002_manual.sql is the migration queuegen generate --manual wrote for you to fill in, and its Up and Down sections still hold the placeholder",
				change}
			code, out, errs := run(t, "check", "-f", spec)
			for _, w := range want {
				if code != 1 || !strings.Contains(errs, w) {
					t.Errorf("check of an unfilled stub = %d:\n%s%s\nwant %q", code, out, errs, w)
				}
			}
			code, out, errs = run(t, "migrate", "up", "--db", d.Address, "-f", spec)
			if code != 1 || !strings.Contains(errs, "its Up section still holds the placeholder") || !strings.Contains(errs, want[1]) || strings.Contains(out, "up    00002") {
				t.Errorf("migrate up of an unfilled stub = %d:\n%s%s", code, out, errs)
			}
			if code, out, _ := run(t, "migrate", "version", "--db", d.Address, "-f", spec); out != "1\n" {
				t.Errorf("version after the refusal = %d, %q; want 1", code, out)
			}
			up, down := "ALTER TABLE ping_queue ALTER COLUMN n TYPE bigint;", "ALTER TABLE ping_queue ALTER COLUMN n TYPE integer;"
			if engine == dburl.MySQL {
				up, down = "ALTER TABLE ping_queue MODIFY n BIGINT NOT NULL;", "ALTER TABLE ping_queue MODIFY n INT NOT NULL;"
			}
			filled := strings.Replace(strings.Replace(string(data), "SELECT queuegen_manual_migration_not_written_yet();", up, 1), "SELECT queuegen_manual_migration_not_written_yet();", down, 1)
			os.WriteFile(stub, []byte(filled), 0o644)
			if code, out, errs := run(t, "check", "-f", spec); code != 0 {
				t.Errorf("check of the filled stub = %d:\n%s%s", code, out, errs)
			}
			if code, out, errs := run(t, "migrate", "up", "--db", d.Address, "-f", spec); code != 0 || !strings.Contains(out, "up    00002_manual.sql") {
				t.Errorf("migrate up of the filled stub = %d:\n%s%s", code, out, errs)
			}
		})
	}
}

// TestMigrateStatusAlignsLongNames: migrate status's columns line up
// whatever the migrations' and queues' name lengths.
func TestMigrateStatusAlignsLongNames(t *testing.T) {
	for _, engine := range dbtest.AndCitus(dbtest.Engines) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			spec := project(t, engineSpec(engine))
			long := "a_queue_named_longer_than_columns_were"
			respec(t, spec, engineSpec(engine)+queueSpec(engine, long))
			d := dbtest.New(t, engine)
			run(t, "migrate", "up-to", "1", "--db", d.Address, "-f", spec)
			code, out, errs := run(t, "migrate", "status", "--db", d.Address, "-f", spec)
			if code != 0 {
				t.Fatalf("migrate status = %d:\n%s%s", code, out, errs)
			}
			lines := strings.Split(out, "\n")
			// The migrations: the state column starts at one offset.
			at := -1
			for _, l := range lines[:2] {
				i := strings.Index(l, "applied")
				if i < 0 {
					i = strings.Index(l, "pending")
				}
				if at >= 0 && i != at || i < 0 {
					t.Errorf("migrate status's columns do not line up:\n%s", out)
				}
				at = i
			}
			if !strings.Contains(lines[1], "00002_create_"+long+"_queue.sql  pending") {
				t.Errorf("migrate status:\n%s", out)
			}
			run(t, "migrate", "up", "--db", d.Address, "-f", spec)
			_, out, _ = run(t, "migrate", "status", "--db", d.Address, "-f", spec)
			var tables []int
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "  ") {
					tables = append(tables, strings.Index(l, " table "))
				}
			}
			if len(tables) != 2 || tables[0] != tables[1] {
				t.Errorf("migrate status's queue columns do not line up:\n%s", out)
			}
		})
	}
}

// TestMigrateLockTimeout: a migration behind a transaction that holds a
// row of its table waits a bounded time for its lock, tries again, and
// fails naming the session that held it, well before the transaction
// ends; a push meanwhile is not stalled for long (behind an unbounded
// ALTER TABLE's lock request it waited for the whole transaction). Once
// the holder ends during the retries, the migration applies. On every
// engine.
func TestMigrateLockTimeout(t *testing.T) {
	for _, engine := range dbtest.AndCitus(dbtest.Engines) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			spec := project(t, engineSpec(engine))
			d := dbtest.New(t, engine)
			if code, out, errs := run(t, "migrate", "up", "--db", d.Address, "-f", spec); code != 0 {
				t.Fatalf("migrate up = %d:\n%s%s", code, out, errs)
			}
			respec(t, spec, strings.Replace(engineSpec(engine), "n: integer", "n: integer, note: {type: text, nullable: true}", 1))
			if _, err := d.SQL.Exec(pushSQL(engine, "ping_queue")); err != nil {
				t.Fatal(err)
			}
			// hold locks a row of the queue in a transaction until release.
			hold := func() (id int64, release func()) {
				t.Helper()
				conn, err := d.SQL.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				idQuery := "SELECT pg_backend_pid()"
				if engine == dburl.MySQL {
					idQuery = "SELECT CONNECTION_ID()"
				}
				if err := conn.QueryRowContext(ctx, idQuery).Scan(&id); err != nil {
					t.Fatal(err)
				}
				tx, err := conn.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				var job int64
				lock := "SELECT id FROM ping_queue ORDER BY id LIMIT 1 FOR UPDATE"
				if engine == dbtest.Citus {
					// Citus locks rows of one shard only: the first job's bucket.
					var bucket int
					if err := tx.QueryRowContext(ctx, "SELECT bucket FROM ping_queue ORDER BY id LIMIT 1").Scan(&bucket); err != nil {
						t.Fatal(err)
					}
					lock = "SELECT id FROM ping_queue WHERE bucket = " + strconv.Itoa(bucket) + " ORDER BY id LIMIT 1 FOR UPDATE"
				}
				if err := tx.QueryRowContext(ctx, lock).Scan(&job); err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				var once bool
				release = func() {
					if !once {
						once = true
						tx.Rollback()
						conn.Close()
						close(done)
					}
				}
				// Whatever happens, the holder ends (old code waited for it).
				go func() {
					select {
					case <-done:
					case <-time.After(40 * time.Second):
						tx.Rollback()
					}
				}()
				return id, release
			}

			holder, release := hold()
			type result struct {
				code      int
				out, errs string
				took      time.Duration
			}
			ran := make(chan result, 1)
			start := time.Now()
			go func() {
				code, out, errs := run(t, "migrate", "up", "--lock-timeout", "1s", "--lock-tries", "2", "--db", d.Address, "-f", spec)
				ran <- result{code, out, errs, time.Since(start)}
			}()
			time.Sleep(300 * time.Millisecond) // the ALTER TABLE is waiting now
			pushStart := time.Now()
			if _, err := d.SQL.ExecContext(ctx, pushSQL(engine, "ping_queue")); err != nil {
				t.Errorf("a push while the migration waits: %v", err)
			}
			pushTook := time.Since(pushStart)
			r := <-ran
			release()
			name := fmt.Sprintf("pid %d", holder)
			if engine == dburl.MySQL {
				name = fmt.Sprintf("connection %d", holder)
			}
			if r.code != 1 || !strings.Contains(r.out, "FAILED up 00002_alter_ping_queue.sql: gave up waiting 1s for a lock held by") ||
				!strings.Contains(r.out, name) || !strings.Contains(r.out, "tried 2 times") || !strings.Contains(r.errs, "trying again in 1s (try 2 of 2)") {
				t.Errorf("migrate up behind a held row = %d after %s:\n%s%s\nwant a lock timeout naming %s", r.code, r.took, r.out, r.errs, name)
			}
			if r.took > 25*time.Second {
				t.Errorf("migrate up behind a held row took %s; want it to give up in about 3s", r.took)
			}
			if pushTook > 10*time.Second {
				t.Errorf("a push behind the waiting migration took %s; want about a second at most", pushTook)
			}
			t.Logf("gave up after %s; a push meanwhile took %s", r.took.Round(time.Millisecond), pushTook.Round(time.Millisecond))

			// The holder ends during the retries: the migration applies.
			_, release = hold()
			go func() { time.Sleep(1500 * time.Millisecond); release() }()
			code, out, errs := run(t, "migrate", "up", "--lock-timeout", "1s", "--lock-tries", "10", "--db", d.Address, "-f", spec)
			release()
			if code != 0 || !strings.Contains(out, "up    00002_alter_ping_queue.sql") || !strings.Contains(errs, "trying again") {
				t.Errorf("migrate up as the holder ends = %d:\n%s%s", code, out, errs)
			}
		})
	}
}

// TestMigrateConnectTimeout: against a server that accepts the connection
// and never answers, migrate status, version and up give up within the
// connect timeout (10s), as the other commands do, instead of hanging.
func TestMigrateConnectTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn // accepted, never answered
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	addr := ln.Addr().String()
	urls := map[string]string{dburl.PostgreSQL: "postgres://postgres@" + addr + "/x?sslmode=disable", dburl.MySQL: "root@tcp(" + addr + ")/x"}
	// Not on Citus (dbtest.AndCitus): the server here is a silent socket,
	// and a Citus coordinator's URL is a PostgreSQL one.
	for _, engine := range dbtest.Engines {
		for _, action := range []string{"status", "version", "up"} {
			t.Run(engine+"/"+action, func(t *testing.T) {
				t.Parallel()
				spec := project(t, engineSpec(engine))
				start := time.Now()
				code, out, errs := run(t, "migrate", action, "--db", urls[engine], "-f", spec)
				took := time.Since(start)
				if code != 1 || !strings.Contains(errs, "cannot connect to the database") || took > 40*time.Second {
					t.Errorf("migrate %s against a silent server = %d after %s:\n%s%s", action, code, took, out, errs)
				}
			})
		}
	}
}
