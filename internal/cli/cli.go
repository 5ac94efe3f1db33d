// Package cli implements the queuegen command: generate, check, migrate and
// init. cmd/queuegen only calls Main.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queuegen/queuegen/generated"
	"github.com/queuegen/queuegen/internal/generate"
	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/internal/ops"
	"github.com/queuegen/queuegen/internal/spec"
	"github.com/queuegen/queuegen/templates"
)

const usage = `queuegen generates PostgreSQL job queues: goose migrations, sqlc queries
and typed Go accessors, from one spec file.

Usage:
  queuegen generate [-f queuegen.yaml] [--allow-drop] [--manual]
                                         write every generated file, list what changed;
                                         a spec change becomes one new migration
  queuegen check    [-f queuegen.yaml]   validate the spec; fail with a diff if files are stale
  queuegen migrate  up|down|status --db URL [-f queuegen.yaml]
                                         apply the migrations with goose
  queuegen init     [-f queuegen.yaml]   write a commented starter spec

Operations (--db URL; the schema comes from -f's spec, or --schema):
  queuegen stats  [--json]                       per queue: ready, scheduled, retrying, running,
                                                 succeeded, dead, oldest ready age, claims/s
  queuegen jobs   --queue Q [--state failed] [--limit 50] [--json]
  queuegen retry  --queue Q (--id N | --state S) [--yes]   make jobs available now
  queuegen cancel --queue Q (--id N | --state S) [--yes]   make unfinished jobs dead
  queuegen purge  --queue Q (--id N | --state S) [--yes]   delete jobs
  queuegen pause  --queue Q  /  queuegen resume --queue Q

Benchmarks (see BENCHMARKS.md):
  queuegen bench --db URL --workload push|push-many|drain|latency|latency-poll|steady|all
                 [--jobs N] [--duration D] [--workers C] [--batch B] [--rate R]

The database URL may also come from $DATABASE_URL.
`

// Main runs the queuegen command with args (without the program name) and
// returns the process exit code: 0 on success, 1 on failure, 2 on bad
// usage.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmds := map[string]func([]string, io.Writer, io.Writer) error{
		"generate": runGenerate,
		"check":    runCheck,
		"migrate":  runMigrate,
		"init":     runInit,
		"stats":    runStats,
		"jobs":     runJobs,
		"retry":    runAction(ops.Retry),
		"cancel":   runAction(ops.Cancel),
		"purge":    runAction(ops.Purge),
		"pause":    runPause(true),
		"resume":   runPause(false),
		"bench":    runBench,
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "queuegen: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	err := cmd(args[1:], stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "queuegen %s: %v\n", args[0], err)
		return 2
	case errors.Is(err, errStale):
		return 1
	default:
		fmt.Fprintf(stderr, "queuegen %s: %v\n", args[0], err)
		return 1
	}
}

type usageError struct{ error }

var errStale = errors.New("generated files are stale")

func flags(name string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("queuegen "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "queuegen.yaml", "the spec file")
	return fs, file
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	return nil
}

func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs, file := flags("generate", stderr)
	allowDrop := fs.Bool("allow-drop", false, "let spec changes drop queues and columns, with their data")
	manual := fs.Bool("manual", false, "for changes queuegen refuses, write a migration to fill in by hand")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	out, err := generate.Generate(*file, generate.Options{AllowDrop: *allowDrop, Manual: *manual})
	if err != nil {
		return err
	}
	changes, err := out.Write()
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		fmt.Fprintf(stdout, "%d files up to date\n", len(out.Files))
		return nil
	}
	for _, c := range changes {
		verb := map[string]string{"add": "wrote  ", "update": "updated", "remove": "removed"}[c.Kind]
		fmt.Fprintf(stdout, "%s %s\n", verb, filepath.Join(out.Root, filepath.FromSlash(c.Path)))
	}
	return nil
}

func runCheck(args []string, stdout, stderr io.Writer) error {
	fs, file := flags("check", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	out, err := generate.Generate(*file, generate.Options{})
	if err != nil {
		return err
	}
	changes, err := out.Plan()
	if err != nil {
		return err
	}
	if len(changes) > 0 {
		fmt.Fprintf(stdout, "%s: generated files are stale; run queuegen generate -f %s\n%s", *file, *file, generate.Diff(changes))
		return errStale
	}
	fmt.Fprintf(stdout, "%s: ok, %d generated files up to date\n", *file, len(out.Files))
	return nil
}

func runMigrate(args []string, stdout, stderr io.Writer) error {
	fs, file := flags("migrate", stderr)
	db := fs.String("db", os.Getenv("DATABASE_URL"), "the database URL (default $DATABASE_URL)")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usageError{errors.New("want up, down or status")}
	}
	action := args[0]
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if *db == "" {
		return usageError{errors.New("--db URL is required (or set DATABASE_URL)")}
	}
	s, err := spec.Load(*file)
	if err != nil {
		return err
	}
	dir := filepath.Join(filepath.Dir(*file), filepath.FromSlash(s.Migrations))
	m, err := migrate.Open(*db, dir, migrate.Schema(s.Schema), migrate.Table(s.MigrationsTable))
	if err != nil {
		return err
	}
	defer m.Close()
	ctx := context.Background()
	switch action {
	case "up":
		return m.Up(ctx, stdout)
	case "down":
		return m.Down(ctx, stdout)
	case "status":
		if err := m.Status(ctx, stdout); err != nil {
			return err
		}
		return listQueues(ctx, *db, s.Schema, stdout)
	}
	return usageError{fmt.Errorf("unknown action %q: want up, down or status", action)}
}

// listQueues prints the queue registry, with queuegen's own generated
// query.
func listQueues(ctx context.Context, url, schema string, w io.Writer) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	queues, err := generated.New(conn).ListQueues(ctx)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		fmt.Fprintln(w, "no queues registered yet (run queuegen migrate up)")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d queues registered:\n", len(queues))
	for _, q := range queues {
		paused := ""
		if q.Paused {
			paused = " (paused)"
		}
		fmt.Fprintf(w, "  %-20s table %-24s %s%s\n", q.Name, q.TableName, q.Mode, paused)
	}
	return nil
}

func runInit(args []string, stdout, stderr io.Writer) error {
	fs, file := flags("init", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	starter, err := templates.FS.ReadFile("starter.yaml.tmpl")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(*file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s already exists; not overwriting it", *file)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(starter); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s; edit it, then run queuegen generate -f %s\n", *file, *file)
	return nil
}
