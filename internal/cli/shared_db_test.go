package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queuegen/queuegen/internal/pgtest"
)

// project writes a spec into a new directory, generates it, and returns
// the spec's path.
func project(t *testing.T, spec string) string {
	t.Helper()
	path := filepath.Join(moduleDir(t), "queuegen.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "generate", "-f", path); code != 0 {
		t.Fatalf("generate = %d:\n%s%s", code, out, errs)
	}
	return path
}

func specIn(schema string) string {
	return `version: 1
package: {name: jobs, dir: jobs}
migrations: migrations
queries: queries
schema: ` + schema + `
queues:
  - name: ping
    payload: {columns: {n: integer}}
`
}

func tables(t *testing.T, conn *pgx.Conn, schema string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY 1", schema)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestTwoSpecsShareADatabase: two specs in two schemas of one database
// each keep their own migration history (their own version table), and
// migrate up and down without seeing each other's.
func TestTwoSpecsShareADatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := project(t, specIn("billing")), project(t, specIn("mail"))
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	for _, spec := range []string{a, b} {
		code, out, errs := run(t, "migrate", "up", "--db", url, "-f", spec)
		if code != 0 || !strings.Contains(out, "00001_queuegen_init.sql") {
			t.Fatalf("migrate up -f %s = %d:\n%s%s", spec, code, out, errs)
		}
	}
	want := "[base_queue ping_queue queuegen_db_version queuegen_nodes queuegen_queues]"
	for _, schema := range []string{"billing", "mail"} {
		if got := strings.Join(tables(t, conn, schema), " "); "["+got+"]" != want {
			t.Errorf("schema %s has %s, want %s", schema, got, want)
		}
	}
	// Down in one leaves the other as it was.
	if code, out, errs := run(t, "migrate", "down", "--db", url, "-f", a); code != 0 {
		t.Fatalf("migrate down = %d:\n%s%s", code, out, errs)
	}
	if got := tables(t, conn, "billing"); len(got) != 1 || got[0] != "queuegen_db_version" {
		t.Errorf("after down, billing has %v; want only its version table", got)
	}
	if got := strings.Join(tables(t, conn, "mail"), " "); "["+got+"]" != want {
		t.Errorf("down in billing changed mail: %s", got)
	}
	code, out, _ := run(t, "migrate", "status", "--db", url, "-f", b)
	if code != 0 || !strings.Contains(out, "applied") || strings.Contains(out, "pending") {
		t.Errorf("status of mail after billing's down = %d:\n%s", code, out)
	}
	if code, out, errs := run(t, "migrate", "up", "--db", url, "-f", a); code != 0 || !strings.Contains(out, "00001_queuegen_init.sql") {
		t.Errorf("migrate up again = %d:\n%s%s", code, out, errs)
	}
}

// TestBesideApplicationGoose: an application that already keeps its own
// goose history (goose_db_version) in the same database and schema keeps
// it; queuegen's migrations keep theirs apart.
func TestBesideApplicationGoose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The application's own goose history: two migrations applied.
	if _, err := conn.Exec(ctx, `CREATE TABLE goose_db_version (id serial PRIMARY KEY, version_id bigint NOT NULL, is_applied boolean NOT NULL, tstamp timestamp DEFAULT now());
		INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, true), (1, true), (2, true);
		CREATE TABLE users (id bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	spec := project(t, specIn("public"))
	if code, out, errs := run(t, "migrate", "up", "--db", url, "-f", spec); code != 0 || !strings.Contains(out, "00001_queuegen_init.sql") {
		t.Fatalf("migrate up beside the application's history = %d:\n%s%s", code, out, errs)
	}
	var appVersions int
	conn.QueryRow(ctx, "SELECT count(*) FROM goose_db_version").Scan(&appVersions)
	if appVersions != 3 {
		t.Errorf("the application's goose history has %d rows, want its 3", appVersions)
	}
	if code, out, errs := run(t, "migrate", "down", "--db", url, "-f", spec); code != 0 || !strings.Contains(out, "down") {
		t.Errorf("migrate down = %d:\n%s%s", code, out, errs)
	}
	if got := strings.Join(tables(t, conn, "public"), " "); got != "goose_db_version queuegen_db_version users" {
		t.Errorf("after queuegen's down the schema has %s", got)
	}
}

// TestOldVersionTable: a database whose queues were migrated under goose's
// default table (as queuegen did before specs had their own) is refused
// with the way out, and migrates once the spec names that table.
func TestOldVersionTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	spec := project(t, specIn("public"))
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if code, _, errs := run(t, "migrate", "up", "--db", url, "-f", spec); code != 0 {
		t.Fatal(errs)
	}
	if _, err := conn.Exec(ctx, "ALTER TABLE queuegen_db_version RENAME TO goose_db_version"); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "migrate", "up", "--db", url, "-f", spec)
	if code != 1 || !strings.Contains(errs, "migrations_table: goose_db_version") {
		t.Errorf("migrate up under a renamed version table = %d, %q", code, errs)
	}
	data, _ := os.ReadFile(spec)
	os.WriteFile(spec, []byte(strings.Replace(string(data), "schema: public\n", "schema: public\nmigrations_table: goose_db_version\n", 1)), 0o644)
	if code, out, errs := run(t, "migrate", "status", "--db", url, "-f", spec); code != 0 || !strings.Contains(out, "applied") {
		t.Errorf("status with migrations_table: goose_db_version = %d:\n%s%s", code, out, errs)
	}
}

// TestForeignMigrationsDirectory: pointing migrations: at a directory of
// the application's own goose migrations says so, and writes nothing.
func TestForeignMigrationsDirectory(t *testing.T) {
	dir := moduleDir(t)
	os.MkdirAll(filepath.Join(dir, "migrations"), 0o755)
	os.WriteFile(filepath.Join(dir, "migrations", "00001_users.sql"), []byte("-- +goose Up\nCREATE TABLE users (id int);\n"), 0o644)
	spec := filepath.Join(dir, "queuegen.yaml")
	os.WriteFile(spec, []byte(specIn("public")), 0o644)
	code, _, errs := run(t, "generate", "-f", spec)
	if code != 1 || !strings.Contains(errs, "migrations holds migrations queuegen did not write (00001_users.sql…): give queuegen a directory of its own") {
		t.Errorf("generate into the application's goose directory = %d, %q", code, errs)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "migrations")); len(entries) != 1 {
		t.Errorf("generate wrote into the directory: %d files", len(entries))
	}
}
