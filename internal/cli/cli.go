// Package cli implements the queuegen command. cmd/queuegen only calls
// Main.
//
// Every command takes its flags before or after its arguments, prints its
// usage on stdout and exits 0 for -h, --help or `queuegen help COMMAND`,
// and exits 2 on bad usage and 1 on failure. Commands that report take
// --json, for a documented shape on stdout; progress goes to stderr.
package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/ops"
)

// command is one subcommand.
type command struct {
	name string
	// args is the synopsis after the name, e.g. "ACTION [VERSION]".
	args string
	// summary is the line `queuegen --help` shows; help, when set, says
	// more in the command's own usage.
	summary, help string
	run           func(c *invocation) error
	// sqlServer is set on the commands that work on every engine's
	// databases (migrate); the others (the operations commands, ui, bench)
	// refuse the URLs of an engine package ops has no backend for
	// (ops.Serves: none today; bench has a target for each engine, see
	// internal/bench/target.go).
	sqlServer bool
}

// group is a heading of the overall usage and its commands.
type group struct {
	title    string
	commands []*command
}

var groups []group

// lookup finds a command by name.
func lookup(name string) *command {
	for _, g := range groups {
		for _, c := range g.commands {
			if c.name == name {
				return c
			}
		}
	}
	return nil
}

func init() {
	groups = []group{
		{"Generating", []*command{
			{name: "generate", args: "[-f queuegen.yaml] [--allow-drop] [--manual]", run: runGenerate,
				summary: "write every generated file; a spec change becomes one new migration"},
			{name: "check", args: "[-f queuegen.yaml]", run: runCheck,
				summary: "validate the spec; exit 1 with a diff when generated files are stale"},
			{name: "init", args: "[-f queuegen.yaml]", run: runInit,
				summary: "write a commented starter spec"},
		}},
		{"Migrating", []*command{
			{name: "migrate", args: "ACTION [VERSION] [--db URL] [-f queuegen.yaml]", run: runMigrate, sqlServer: true,
				summary: "apply the migrations with goose: up, up-to, down, down-to, redo, reset, status, version",
				help: `Actions:
  up             apply every pending migration
  up-to VERSION  apply pending migrations up to VERSION
  down           roll back the latest migration
  down-to VERSION
                 roll back migrations down to VERSION (0: all of them)
  redo           roll back the latest migration and apply it again
  reset          roll back every migration
  status         list the migrations and whether each is applied, and the registered queues
  version        print the database's migration version

The migrations' history is kept in the spec's version table
(migrations_table, default queuegen_db_version, in the spec's schema).`},
		}},
		{"Operating queues (--db URL; the schema is the spec's, -f, or --schema)", []*command{
			{name: "stats", args: "", run: runStats,
				summary: "per queue: ready, scheduled, retrying, running, expired (lease), succeeded, dead, oldest ready age, claims/s (estimates, marked ≈, for tables too large to count within --budget)"},
			{name: "jobs", args: "--queue Q [--state all] [--id N] [--limit 50]", run: runJobs,
				summary: "list a queue's jobs with their payload, or show one job whole"},
			{name: "retry", args: "--queue Q (--id N | --state S) [--yes]", run: runAction(actionRetry),
				summary: "make jobs available now, with an attempt left"},
			{name: "cancel", args: "--queue Q (--id N | --state S) [--yes]", run: runAction(actionCancel),
				summary: "make unfinished jobs dead"},
			{name: "purge", args: "--queue Q (--id N | --state S) [--yes]", run: runAction(actionPurge),
				summary: "delete jobs"},
			{name: "nodes", args: "", run: runNodes,
				summary: "the worker nodes of every queue with their last heartbeat, stale ones marked, and the jobs leased to nodes that stopped"},
			{name: "pause", args: "--queue Q", run: runPause(true),
				summary: "stop every worker of a queue from claiming, until resume"},
			{name: "resume", args: "--queue Q", run: runPause(false),
				summary: "undo pause"},
		}},
		{"Watching", []*command{
			{name: "ui", args: "[--db URL] [-f queuegen.yaml] [--addr 127.0.0.1:8080] [--auth basic|token] [--read-only]", run: runUI,
				summary: "serve the web dashboard: queues, jobs, periodic jobs, nodes, and the operations above",
				help: `It listens on loopback unless --addr says otherwise, and any other address
requires --auth: basic reads the user and password from $QUEUEGEN_UI_USER and
$QUEUEGEN_UI_PASSWORD; token reads $QUEUEGEN_UI_TOKEN (sent as a bearer token, or
as the password of basic authentication). Every action is a POST with a CSRF
token; --read-only hides and refuses them. The spec (-f), when there is one,
gives the schema and the periodic jobs' schedules.`},
		}},
		{"Measuring (see BENCHMARKS.md)", []*command{
			{name: "bench", args: "--db URL --workload W", run: runBench,
				summary: "measure push, push-many, drain, latency and steady workloads on queues of its own",
				help:    "On PostgreSQL the bench works in a schema of its own, queuegen_bench; on MySQL and MariaDB in a\ndatabase of its own, queuegen_bench, on the server --db names (on SQL Server too, which needs a login\nthat may CREATE DATABASE). It creates it, and drops it at the end. On SQL Server the bench is built and\nits SQL grammar-checked, but it has never run against a server."},
		}},
		{"About", []*command{
			{name: "version", args: "", run: runVersion,
				summary: "print queuegen's version and the sqlc, goose and pgx versions it embeds"},
			{name: "help", args: "[COMMAND]", run: runHelp,
				summary: "print this help, or a command's"},
		}},
	}
}

// usage is the overall usage: every command with one line.
func usage(w io.Writer) {
	fmt.Fprint(w, `queuegen generates database job queues for Go: goose migrations, sqlc
queries and a typed accessor per queue, from one spec file.

Usage: queuegen COMMAND [flags] [arguments]
`)
	for _, g := range groups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, c := range g.commands {
			fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprint(w, `
Run queuegen help COMMAND (or queuegen COMMAND --help) for a command's flags.
A database URL (--db) defaults to $DATABASE_URL.
`)
}

// Main runs the queuegen command with args (without the program name) and
// returns the process exit code: 0 on success and for help, 1 on failure,
// 2 on bad usage.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "-version", "--version":
		args = []string{"version"}
	}
	cmd := lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(stderr, "queuegen: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	inv := &invocation{cmd: cmd, args: args[1:], stdout: stdout, stderr: stderr}
	inv.fs = flag.NewFlagSet("queuegen "+cmd.name, flag.ContinueOnError)
	inv.fs.SetOutput(io.Discard) // errors are reported below, usage on request
	err := cmd.run(inv)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "queuegen %s: %v\nusage: queuegen %s %s (queuegen help %s for more)\n", cmd.name, ue.error, cmd.name, cmd.args, cmd.name)
		return 2
	case errors.Is(err, errReported):
		return 1
	default:
		fmt.Fprintf(stderr, "queuegen %s: %v\n", cmd.name, err)
		return 1
	}
}

// invocation is one run of a command.
type invocation struct {
	cmd            *command
	fs             *flag.FlagSet
	args           []string // as given
	positional     []string // after parse
	stdout, stderr io.Writer
	jsonOut        *bool
}

type usageError struct{ error }

var (
	// errHelp ends a command that printed its usage on request.
	errHelp = errors.New("help requested")
	// errReported fails a command whose output already said why.
	errReported = errors.New("failed; see above")
)

// specFlag adds -f.
// given reports whether any of the named flags was set on the command line.
func (c *invocation) given(names ...string) bool {
	set := false
	c.fs.Visit(func(f *flag.Flag) { set = set || slices.Contains(names, f.Name) })
	return set
}

func (c *invocation) specFlag() *string {
	return c.fs.String("f", "queuegen.yaml", "the spec file")
}

// jsonFlag adds --json.
func (c *invocation) jsonFlag() *bool {
	c.jsonOut = c.fs.Bool("json", false, "print JSON (see the README for its shape)")
	return c.jsonOut
}

// dbFlag adds --db, defaulting to $DATABASE_URL.
func (c *invocation) dbFlag() *string {
	return c.fs.String("db", os.Getenv("DATABASE_URL"), "the database URL (default $DATABASE_URL)")
}

// parse parses the flags, which may come before, between and after the
// positional arguments. -h and --help print the usage on stdout.
func (c *invocation) parse() error {
	args := c.args
	for {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.usage(c.stdout)
				return errHelp
			}
			return usageError{err}
		}
		rest := c.fs.Args()
		if len(rest) == 0 {
			return nil
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			c.positional = append(c.positional, rest...)
			return nil
		}
		c.positional = append(c.positional, rest[0])
		args = rest[1:]
	}
}

// noArgs refuses positional arguments.
func (c *invocation) noArgs() error {
	if len(c.positional) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", c.positional[0])}
	}
	return nil
}

// usage prints the command's usage.
func (c *invocation) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: queuegen %s %s\n\n%s.\n", c.cmd.name, c.cmd.args, upperFirst(c.cmd.summary))
	if c.cmd.help != "" {
		fmt.Fprintf(w, "\n%s\n", c.cmd.help)
	}
	has := false
	c.fs.VisitAll(func(*flag.Flag) { has = true })
	if has {
		fmt.Fprint(w, "\nFlags:\n")
		c.fs.SetOutput(w)
		c.fs.PrintDefaults()
		c.fs.SetOutput(io.Discard)
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// printJSON writes v as indented JSON.
func (c *invocation) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// databaseURL checks a --db value: set, and an address of an engine
// queuegen speaks (a PostgreSQL URL or key=value string, a mysql:// URL,
// a go-sql-driver/mysql DSN, or a sqlserver:// URL) that the command
// works on.
func (c *invocation) databaseURL(db string) (dburl.DB, error) {
	if db == "" {
		return dburl.DB{}, usageError{errors.New("--db URL is required (or set DATABASE_URL)")}
	}
	url, err := dburl.Parse(db)
	if err == nil && !c.cmd.sqlServer && !ops.Serves(url.Engine) {
		err = fmt.Errorf("%s is not supported by the operations commands, ui and bench yet; generate, check and migrate support it", dburl.EngineTitle(url.Engine))
	}
	return url, err
}

// redactErr keeps a password out of an error that quotes the URL.
func redactErr(err error, db string) string {
	return dburl.Redact(err.Error(), db)
}

func runHelp(c *invocation) error {
	if err := c.parse(); err != nil {
		return err
	}
	switch len(c.positional) {
	case 0:
		usage(c.stdout)
		return nil
	case 1:
		cmd := lookup(c.positional[0])
		if cmd == nil {
			return usageError{fmt.Errorf("unknown command %q", c.positional[0])}
		}
		// Run the command's own flag setup to print its usage.
		inv := &invocation{cmd: cmd, args: []string{"--help"}, stdout: c.stdout, stderr: c.stderr,
			fs: flag.NewFlagSet("queuegen "+cmd.name, flag.ContinueOnError)}
		inv.fs.SetOutput(io.Discard)
		return cmd.run(inv)
	}
	return usageError{errors.New("give at most one command")}
}
