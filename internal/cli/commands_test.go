package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/pgtest"
)

var commands = []string{"generate", "check", "init", "migrate", "stats", "jobs", "retry", "cancel", "purge", "pause", "resume", "bench", "version", "help"}

// TestHelp: asking for help is not an error: usage on stdout, exit 0, for
// every command and every way of asking.
func TestHelp(t *testing.T) {
	code, out, errs := run(t, "--help")
	if code != 0 || errs != "" {
		t.Errorf("queuegen --help = %d, stderr %q", code, errs)
	}
	for _, cmd := range commands {
		if !strings.Contains(out, "\n  "+cmd+" ") {
			t.Errorf("queuegen --help does not list %s:\n%s", cmd, out)
		}
		for _, args := range [][]string{{cmd, "--help"}, {cmd, "-h"}, {"help", cmd}} {
			code, out, errs := run(t, args...)
			if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: queuegen "+cmd) {
				t.Errorf("queuegen %s = %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errs)
			}
		}
	}
	if code, out, _ := run(t, "migrate", "--help"); code != 0 || !strings.Contains(out, "up-to VERSION") || !strings.Contains(out, "-db string") {
		t.Errorf("migrate --help:\n%s", out)
	}
	if code, _, errs := run(t, "help", "frobnicate"); code != 2 || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Errorf("help of an unknown command = %d, %q", code, errs)
	}
	if code, _, errs := run(t, "generate", "--frob"); code != 2 || !strings.Contains(errs, "flag provided but not defined: -frob") || !strings.Contains(errs, "usage: queuegen generate") {
		t.Errorf("an unknown flag = %d, %q", code, errs)
	}
}

// TestVersion runs the built binary: a test binary carries no module
// versions.
func TestVersion(t *testing.T) {
	code, out, _ := runBinary(t, "version")
	if code != 0 || !strings.HasPrefix(out, "queuegen ") || !strings.Contains(out, "sqlc  v1.31.1") || !strings.Contains(out, "goose v3.28.0") {
		t.Errorf("version = %d:\n%s", code, out)
	}
	code, out, _ = runBinary(t, "version", "--json")
	var v map[string]string
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["sqlc"] != "v1.31.1" || v["goose"] != "v3.28.0" {
		t.Errorf("version --json = %d:\n%s", code, out)
	}
}

// TestMigrateActions: flags before or after the action; every action
// through goose's Provider, each saying what it did; nothing to do is
// said, not silent. On every engine.
func TestMigrateActions(t *testing.T) {
	for _, engine := range dbtest.AndCitus(dbtest.Engines) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			testMigrateActions(t, engine)
		})
	}
}

func testMigrateActions(t *testing.T, engine string) {
	spec := project(t, engineSpec(engine))
	// Three migrations: the first, and two changes.
	data, _ := os.ReadFile(spec)
	for _, change := range []string{"    payload: {columns: {n: integer, m: {type: text, nullable: true}}}\n", "    payload: {columns: {n: integer, m: {type: text, nullable: true}, k: {type: text, nullable: true}}}\n"} {
		data = []byte(strings.Replace(string(data), string(data[strings.Index(string(data), "    payload:"):]), change, 1))
		os.WriteFile(spec, data, 0o644)
		if code, out, errs := run(t, "generate", "-f", spec); code != 0 {
			t.Fatalf("generate: %s%s", out, errs)
		}
	}
	url := dbtest.New(t, engine).Address
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "--db", url, "-f", spec, "up-to", "2"}, "up    00002_alter_ping_queue.sql"},
		{[]string{"migrate", "version", "--db", url, "-f", spec}, "2\n"},
		{[]string{"migrate", "up", "--db", url, "-f", spec}, "up    00003_alter_ping_queue.sql"},
		{[]string{"migrate", "status", "--db", url, "-f", spec}, "1 queue registered:\n  ping "},
		{[]string{"-f", spec, "--db", url}, "no migrations to apply; at version 3\n"}, // "migrate up" again, flags first
		{[]string{"migrate", "redo", "--db", url, "-f", spec}, "down  00003_alter_ping_queue.sql"},
		{[]string{"migrate", "down-to", "1", "--db", url, "-f", spec}, "at version 1\n"},
		{[]string{"migrate", "reset", "--db", url, "-f", spec}, "down  00001_queuegen_init.sql"},
		{[]string{"migrate", "down", "--db", url, "-f", spec}, "no migrations to roll back; at version 0\n"},
	}
	for _, s := range steps {
		args := s.args
		if args[0] == "-f" {
			args = append([]string{"migrate"}, append(args, "up")...)
		}
		code, out, errs := run(t, args...)
		if code != 0 || !strings.Contains(out, s.want) {
			t.Errorf("queuegen %s = %d:\n%s%s\nwant %q", strings.Join(args[1:], " "), code, out, errs, s.want)
		}
	}
	if code, _, errs := run(t, "migrate", "up-to", "--db", url, "-f", spec); code != 2 || !strings.Contains(errs, "up-to needs a VERSION") {
		t.Errorf("up-to without a version = %d, %q", code, errs)
	}
	if code, _, errs := run(t, "migrate", "sideways", "--db", url, "-f", spec); code != 2 || !strings.Contains(errs, `unknown action "sideways"`) {
		t.Errorf("unknown action = %d, %q", code, errs)
	}
}

// TestMigratePartialFailure: a failing migration stops the run; the
// output says what ran, what failed and what was not applied, and the
// command fails. goose's own wording does not leak through.
func TestMigratePartialFailure(t *testing.T) {
	t.Parallel()
	spec := project(t, specIn("public"))
	migrations := filepath.Join(filepath.Dir(spec), "migrations")
	os.WriteFile(filepath.Join(migrations, "00002_broken.sql"), []byte("-- +goose Up\nCREATE TABLE ping_queue (x int);\n-- +goose Down\n"), 0o644)
	os.WriteFile(filepath.Join(migrations, "00003_later.sql"), []byte("-- +goose Up\nSELECT 1;\n-- +goose Down\nSELECT 1;\n"), 0o644)
	url := pgtest.URL(t)
	code, out, errs := run(t, "migrate", "up", "--db", url, "-f", spec)
	if code != 1 || !strings.Contains(out, "up    00001_queuegen_init.sql") || !strings.Contains(out, "FAILED up 00002_broken.sql: ") ||
		!strings.Contains(out, `relation "ping_queue" already exists`) || !strings.Contains(out, "not applied: 00003_later.sql") ||
		!strings.Contains(errs, "1 migration ran, 00002_broken.sql failed; the database is at version 1") {
		t.Errorf("a failing migration = %d:\n%s%s", code, out, errs)
	}
	for _, leak := range []string{"failed to initialize", "migrate: migrate", "partial migration error"} {
		if strings.Contains(out+errs, leak) {
			t.Errorf("goose's wording %q leaked:\n%s%s", leak, out, errs)
		}
	}
	// A connection error is said once.
	code, _, errs = run(t, "migrate", "up", "--db", "postgres://nobody@127.0.0.1:1/x?connect_timeout=2", "-f", spec)
	if code != 1 || strings.Count(errs, "cannot connect to the database") != 1 || strings.Count(errs, "\n") != 1 || strings.Count(errs, "connection refused") != 1 {
		t.Errorf("an unreachable database = %d, %q", code, errs)
	}
}

// TestDatabaseURLs: a URL of a scheme queuegen does not speak says which
// it does; --db falls back to $DATABASE_URL for every database command.
func TestDatabaseURLs(t *testing.T) {
	for _, cmd := range [][]string{{"stats"}, {"migrate", "up"}, {"jobs", "--queue", "x"}, {"bench"}} {
		code, _, errs := run(t, append(cmd, "--db", "oracle://scott@127.0.0.1:1521/app")...)
		if code != 1 || !strings.Contains(errs, `database URLs of scheme "oracle" are not supported: use postgres://`) || !strings.Contains(errs, "mysql://") || !strings.Contains(errs, "sqlserver://") {
			t.Errorf("%v with an oracle:// URL = %d, %q", cmd, code, errs)
		}
	}
	url, _ := seeded(t)
	t.Setenv("DATABASE_URL", url)
	for _, cmd := range [][]string{{"stats"}, {"jobs", "--queue", "email"}, {"pause", "--queue", "email"}, {"resume", "--queue", "email"}, {"migrate", "version", "-f", "../../integration/e2e/queuegen.yaml"}} {
		if code, out, errs := run(t, cmd...); code != 0 {
			t.Errorf("%v with $DATABASE_URL only = %d:\n%s%s", cmd, code, out, errs)
		}
	}
}

// TestJobsShowsPayloads: jobs lists every state by default, with the
// payload (cut short in the table, whole in --json and with --id), and
// pages by id.
func TestJobsShowsPayloads(t *testing.T) {
	url, conn := seeded(t)
	ctx := context.Background()
	code, out, _ := run(t, "jobs", "--db", url, "--queue", "email")
	if code != 0 || !strings.Contains(out, `{"subject":null,"recipient":"ready","tenant_id":null}`) || !strings.Contains(out, "8 jobs of queue email (state all)") {
		t.Errorf("jobs = %d:\n%s", code, out)
	}
	code, out, _ = run(t, "jobs", "--db", url, "--queue", "email", "--limit", "2")
	var last int64
	conn.QueryRow(ctx, "SELECT min(id) FROM (SELECT id FROM email_queue ORDER BY id DESC LIMIT 2) AS x").Scan(&last)
	if code != 0 || !strings.Contains(out, "2 jobs of queue email (state all); more with --before "+itoa(last)) {
		t.Errorf("jobs --limit 2 = %d:\n%s", code, out)
	}
	if code, out, _ := run(t, "jobs", "--db", url, "--queue", "email", "--before", itoa(last)); code != 0 || !strings.Contains(out, "6 jobs") {
		t.Errorf("jobs --before = %d:\n%s", code, out)
	}
	code, out, _ = run(t, "jobs", "--db", url, "--queue", "email", "--state", "dead", "--json")
	var jobs []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &jobs) != nil || len(jobs) != 2 {
		t.Fatalf("jobs --json = %d:\n%s", code, out)
	}
	if p, _ := jobs[0]["payload"].(map[string]any); p["recipient"] != "bad" || len(jobs[0]["errors"].([]any)) != 3 {
		t.Errorf("jobs --json payload and errors: %v", jobs[0])
	}
	var dead int64
	conn.QueryRow(ctx, "SELECT max(id) FROM email_queue WHERE state = 'dead'").Scan(&dead)
	code, out, _ = run(t, "jobs", "--db", url, "--queue", "email", "--id", itoa(dead))
	if code != 0 || !strings.Contains(out, "job "+itoa(dead)+" of queue email") || !strings.Contains(out, `"recipient": "bad"`) ||
		!strings.Contains(out, "3 (time unknown): smtp: 550 no such user") {
		t.Errorf("jobs --id = %d:\n%s", code, out)
	}
	if code, _, errs := run(t, "jobs", "--db", url, "--queue", "email", "--id", "99999"); code != 1 || !strings.Contains(errs, "queue email has no job 99999") {
		t.Errorf("jobs --id of a missing job = %d, %q", code, errs)
	}
	// stats --json: the row across the base table is structured.
	code, out, _ = run(t, "stats", "--db", url, "-f", "../../integration/e2e/queuegen.yaml", "--json")
	var stats []map[string]any
	json.Unmarshal([]byte(out), &stats)
	if code != 0 || stats[len(stats)-1]["base_table"] != "base_queue" || stats[len(stats)-1]["queue"] != nil {
		t.Errorf("stats --json's base row: %v", stats[len(stats)-1])
	}
	// retry --json has the documented shape.
	code, out, _ = run(t, "retry", "--db", url, "--queue", "email", "--id", itoa(dead), "--json")
	var res map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["queue"] != "email" || res["action"] != "retry" || len(res["changed"].([]any)) != 1 {
		t.Errorf("retry --json = %d:\n%s", code, out)
	}
}

// TestLargePurgeShowsProgress: an action on more jobs than one batch runs
// in batches and reports each on stderr.
func TestLargePurgeShowsProgress(t *testing.T) {
	url, conn := seeded(t)
	if _, err := conn.Exec(context.Background(), "INSERT INTO email_queue (recipient, max_attempts, state, finished_at) SELECT 'old', 3, 'dead', now() FROM generate_series(1, 25000)"); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "purge", "--db", url, "--queue", "email", "--state", "dead", "--yes")
	if code != 0 || !strings.Contains(out, "purged 25002 jobs") || !strings.Contains(errs, "purge: 10000 of 25002 jobs\npurge: 20000 of 25002 jobs\npurge: 25002 of 25002 jobs\n") {
		t.Errorf("a large purge = %d:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// TestHints: messages name the command the user runs.
func TestHints(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := run(t, "generate", "-f", filepath.Join(dir, "queuegen.yaml"))
	if code != 1 || !strings.Contains(errs, "no such file: write a starter spec with queuegen init") {
		t.Errorf("generate without a spec = %d, %q", code, errs)
	}
	spec := filepath.Join(dir, "queuegen.yaml")
	code, out, _ := run(t, "init", "-f", spec)
	if code != 0 || !strings.Contains(out, "go generate ./...") {
		t.Errorf("init = %d, %q", code, out)
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// runBinary runs the queuegen command built once for the whole test run.
func runBinary(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "queuegen-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "queuegen")
		if out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/queuegen").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(binPath, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}
