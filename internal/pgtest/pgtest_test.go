package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(RunMain(m)) }

func connect(t *testing.T, u string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("connect %s: %v", u, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func dbNameOf(t *testing.T, u string) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(pu.Path, "/")
}

func TestServerURL(t *testing.T) {
	t.Parallel()
	u := ServerURL(t)
	t.Logf("server: %s", redact(u))
	if u != ServerURL(t) {
		t.Fatal("ServerURL is not stable within the process")
	}
	if skipLocalhost() && os.Getenv(EnvDatabaseURL) == "" {
		for _, c := range localhostCandidates {
			if u == c {
				t.Fatalf("%s is set but the localhost server %s was used", EnvNoLocalhost, c)
			}
		}
	}
}

func TestTwoURLsAreDistinctUsableDatabases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u1, u2 := URL(t), URL(t)
	if u1 == u2 {
		t.Fatalf("URL returned the same URL twice: %s", u1)
	}
	c1, c2 := connect(t, u1), connect(t, u2)

	for _, tc := range []struct {
		conn *pgx.Conn
		url  string
	}{{c1, u1}, {c2, u2}} {
		var db string
		if err := tc.conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
			t.Fatal(err)
		}
		if want := dbNameOf(t, tc.url); db != want {
			t.Errorf("current_database() = %q, want %q", db, want)
		}
		if !strings.HasPrefix(db, "qg_testtwourlsaredistinctusabledatabases_") {
			t.Errorf("database name %q does not carry the test name", db)
		}
		var n int
		if err := tc.conn.QueryRow(ctx,
			"SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("database %s is not empty: %d tables", db, n)
		}
	}

	if _, err := c1.Exec(ctx, "CREATE TABLE only_in_one (id int); INSERT INTO only_in_one VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var got int
	if err := c1.QueryRow(ctx, "SELECT id FROM only_in_one").Scan(&got); err != nil || got != 1 {
		t.Fatalf("read back from first database: %d, %v", got, err)
	}
	var exists bool
	if err := c2.QueryRow(ctx, "SELECT to_regclass('only_in_one') IS NOT NULL").Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatal("table created in the first database is visible in the second")
	}

	// The URL keeps the admin URL's user, host, port and parameters.
	admin, _ := url.Parse(ServerURL(t))
	got1, _ := url.Parse(u1)
	if admin.User.String() != got1.User.String() || admin.Host != got1.Host || admin.RawQuery != got1.RawQuery {
		t.Errorf("URL %s does not keep user/host/params of %s", redact(u1), redact(admin.String()))
	}
}

func TestPool(t *testing.T) {
	t.Parallel()
	pool := Pool(t)
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT 41 + 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 42 {
		t.Fatalf("got %d", n)
	}
}

func TestDatabaseDroppedAfterCleanup(t *testing.T) {
	t.Parallel()
	var name string
	var held *pgx.Conn
	t.Run("inner", func(t *testing.T) {
		u := URL(t)
		name = dbNameOf(t, u)
		// Leave a connection open across the subtest's cleanup to check
		// that the drop is forced.
		conn, err := pgx.Connect(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		held = conn
		// Pool's cleanup closes the pool before the drop.
		_ = Pool(t)
	})
	if held != nil {
		defer held.Close(context.Background())
	}
	if name == "" {
		t.Fatal("subtest did not record a database name")
	}
	admin := connect(t, ServerURL(t))
	var n int
	if err := admin.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s still exists after the subtest's cleanup", name)
	}
}

func TestManyParallel(t *testing.T) {
	t.Parallel()
	for i := range 16 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			pool := Pool(t)
			if _, err := pool.Exec(context.Background(), "CREATE TABLE t (id int)"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestNoServerMessage checks the failure message when no server can be found
// or started. It is not parallel because it changes the environment.
func TestNoServerMessage(t *testing.T) {
	t.Setenv(EnvDatabaseURL, "")
	t.Setenv(EnvNoLocalhost, "1")
	t.Setenv("PATH", "")
	old := serverBinDirsGlob
	serverBinDirsGlob = filepath.Join(t.TempDir(), "*", "bin")
	t.Cleanup(func() { serverBinDirsGlob = old })

	mu.Lock()
	u, err := resolveServer()
	mu.Unlock()
	if err == nil {
		t.Fatalf("resolveServer() = %q, want an error", u)
	}
	msg := err.Error()
	t.Logf("message: %s", msg)
	for _, want := range []string{
		"no PostgreSQL server",
		"QUEUEGEN_TEST_DATABASE_URL=postgres://",
		"127.0.0.1:5432",
		"apt-get install -y postgresql",
		"initdb",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message does not mention %q", want)
		}
	}
}

func TestSanitize(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{"TestFoo", 47, "testfoo"},
		{"TestFoo/Bar_Baz", 47, "testfoo_bar_baz"},
		{"TestFoo/sub_case#01", 47, "testfoo_sub_case_01"},
		{"Test--Weird  Name!!", 47, "test_weird_name"},
		{"__Leading/and/trailing__", 47, "leading_and_trailing"},
		{"TestÜmlaut/é", 47, "test_mlaut"},
		{"TestÜ", 47, "test"},
		{"", 47, "test"},
		{"///", 47, "test"},
		{"TestAbcdef", 4, "test"},
		{"TestAB_CD", 7, "testab"}, // truncation does not leave a trailing '_'
		{"X", 0, ""},
		{strings.Repeat("a", 100), 47, strings.Repeat("a", 47)},
	} {
		if got := sanitize(tc.in, tc.limit); got != tc.want {
			t.Errorf("sanitize(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
}

func TestDatabaseName(t *testing.T) {
	valid := regexp.MustCompile(`^qg_[a-z0-9_]+_[0-9a-f]{12}$`)
	for _, tc := range []struct {
		in, wantStem string
	}{
		{"TestFoo/Bar", "testfoo_bar"},
		{"", "test"},
		{strings.Repeat("TestLong/", 20), "testlong_testlong_testlong_testlong_testlong_te"},
	} {
		got, err := databaseName(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > maxIdentLen || !valid.MatchString(got) {
			t.Errorf("databaseName(%q) = %q: not a valid name", tc.in, got)
		}
		if want := "qg_" + tc.wantStem + "_"; !strings.HasPrefix(got, want) || len(got) != len(want)+12 {
			t.Errorf("databaseName(%q) = %q, want %s<12 hex>", tc.in, got, want)
		}
		again, _ := databaseName(tc.in)
		if again == got {
			t.Errorf("databaseName(%q) returned %q twice", tc.in, got)
		}
	}
}

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct {
		admin, want string
	}{
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
			"postgres://postgres@127.0.0.1:5432/qg_x?sslmode=disable"},
		{"postgresql://u:p%40ss@db.example:6543?sslmode=require&application_name=a",
			"postgresql://u:p%40ss@db.example:6543/qg_x?sslmode=require&application_name=a"},
		{"postgres://u@h/admin?dbname=admin&sslmode=disable",
			"postgres://u@h/qg_x?sslmode=disable"},
	} {
		got, err := withDatabase(tc.admin, "qg_x")
		if err != nil {
			t.Fatalf("withDatabase(%q): %v", tc.admin, err)
		}
		if got != tc.want {
			t.Errorf("withDatabase(%q) = %q, want %q", tc.admin, got, tc.want)
		}
	}
	if _, err := withDatabase("host=h user=u", "qg_x"); err == nil {
		t.Error("withDatabase accepted a keyword/value DSN")
	}
}

// TestRerunArgs: the run through PgBouncer leaves out the tests it is
// told to, joined with any -skip the caller gave, and keeps the rest of
// the arguments.
func TestRerunArgs(t *testing.T) {
	for _, c := range []struct {
		args, notAgain, want []string
	}{
		{[]string{"-test.v=true"}, nil, []string{"-test.v=true"}},
		{[]string{"-test.v=true"}, []string{"^TestA$", "^TestMySQL"}, []string{"-test.v=true", "-test.skip=^TestA$|^TestMySQL"}},
		{[]string{"-test.skip=Slow", "-test.run=X"}, []string{"^TestA$"}, []string{"-test.run=X", "-test.skip=^TestA$|Slow"}},
		{[]string{"-test.skip", "Slow"}, []string{"^TestA$"}, []string{"-test.skip=^TestA$|Slow"}},
	} {
		if got := rerunArgs(c.args, c.notAgain); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("rerunArgs(%q, %q) = %q, want %q", c.args, c.notAgain, got, c.want)
		}
	}
}
