package reliability_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/dbtest"
)

// sqlEdit is one edit of a deliberate bug in the generated SQL: in each
// query whose name begins with Query, every Old becomes New.
type sqlEdit struct{ Query, Old, New string }

// mutation is a deliberate bug, the scenarios that must fail with it and
// the sign of it they must fail with. A bug of the runtime (queue/
// mutation_on.go) is switched on by name; a bug of the generated SQL is
// its edits, made at run time by the build's overlay (sqlOverlay).
type mutation struct {
	name, scenarios, sign string
	// orSign is another sign of the same bug, where its effect can show
	// two ways ("" if none).
	orSign string
	sql    []sqlEdit
	// engines the bug is tried on; nil: every engine of the run.
	engines []string
}

// mutations are the bugs the suite must catch.
var mutations = []mutation{
	// completes every 7th job without calling its handler
	{name: "skip-handler", scenarios: "TestHandlerFailures", sign: "completed without a successful handler run"},
	// drops a batch of results the database refused: a dropped completion
	// leaves its job leased, to run again once its node restarts and gives
	// it back (handled twice), or, where a result written after the
	// restart is dropped too, leased for the scenario's 10-minute lease
	// (unfinished: seen on MariaDB with the machine loaded by a second
	// suite, 419 jobs after the 2-minute wait)
	{name: "drop-refused", scenarios: "TestConnectionsTerminated", sign: "handled successfully more than once", orSign: "still unfinished after"},
	// completes a job whose handler failed
	{name: "error-completes", scenarios: "TestHandlerFailures", sign: "want 15 dead"},
	// runs every 11th job's handler twice
	{name: "double-run", scenarios: "TestHandlerFailures", sign: "handled successfully more than once"},
	// the reaper makes dead every job whose lease expired, attempts left
	// or not
	{name: "reap-any-expired", scenarios: "TestStaleHolders", sign: "made dead with attempts left", sql: []sqlEdit{
		{"ReapWork", "AND attempt >= max_attempts", "AND true"},   // PostgreSQL
		{"DoomedWork", "AND attempt >= max_attempts", "AND TRUE"}, // MySQL
	}},
	// Complete and CompleteMany without the attempt fence
	{name: "complete-unfenced", scenarios: "TestStaleHolders", sign: "a stale holder completed", sql: []sqlEdit{
		{"CompleteWork", "AND attempt = $2 AND", "AND $2::integer IS NOT NULL AND"},
		{"CompleteManyWork", "AND job.attempt = ($2::integer[])[width_bucket(job.id, $1::bigint[])]",
			"AND ($2::integer[])[width_bucket(job.id, $1::bigint[])] IS NOT NULL"},
		{"CompleteWork", "AND attempt = ? AND", "AND ? IS NOT NULL AND"},
		{"CompleteManyWork", "AND attempt = ?", "AND ? IS NOT NULL"},
	}},
	// Snooze and Release give the attempt back by lowering it (instead of
	// raising max_attempts), so a later claim repeats an attempt number
	{name: "attempt-lowered", scenarios: "TestStaleHolders", sign: "attempt numbers must only rise", sql: []sqlEdit{
		{"SnoozeWork", "max_attempts = max_attempts + 1,", "attempt = attempt - 1,"},
		{"ReleaseWork", "max_attempts = max_attempts + 1,", "attempt = attempt - 1,"},
	}},
	// the maintainer's batches take no maintenance lock
	{name: "maintainer-unlocked", scenarios: "TestStaleHolders", sign: "while another node held the maintenance lock", sql: []sqlEdit{
		{"ReapWork", "(SELECT pg_try_advisory_xact_lock(", "(SELECT true OR pg_try_advisory_xact_lock("},
		{"LockMaintenanceWork", "FOR UPDATE SKIP LOCKED", ""},
	}},
	// claims lock with FOR UPDATE but do not skip locked rows
	{name: "claim-waits", scenarios: "TestClaimSkipsLockedJobs", sign: "a claim waited on a row lock", sql: []sqlEdit{
		{"Claim", "FOR UPDATE SKIP LOCKED", "FOR UPDATE"},
	}},
	// the limits claim ignores per_key (only global binds)
	{name: "per-key-ignored", scenarios: "TestLimitedWorkersKilled", sign: "leased jobs of one tenant", sql: []sqlEdit{
		{"ClaimLimited", "2 - coalesce(busy.n, 0)", "6 - coalesce(busy.n, 0)"},
		{"ClaimDueLimited", "2 - COALESCE(held.n, 0)", "6 - COALESCE(held.n, 0)"},
	}},
	// limited claims do not take turns: MySQL's claim lock (the registry
	// row) is shared, so two claims fill one free slot
	{name: "claim-lock-shared", scenarios: "TestLimitedWorkersKilled", sign: "the limits are 2 and 6", engines: []string{mysqlEng}, sql: []sqlEdit{
		{"LockClaimsLimited", "FOR UPDATE", "LOCK IN SHARE MODE"},
	}},
}

// TestMutationEditsMatchTheGeneratedSQL: every edit of a mutation's SQL
// finds its text in a query of the generated packages (PostgreSQL's or
// MySQL's; an edit may be for one engine alone). The edits are made at
// run time and one that matches nothing changes nothing, so without this a
// change of the generated SQL would leave a mutation that no longer
// mutates, and TestSuiteCatchesMutations would fail far from the cause.
func TestMutationEditsMatchTheGeneratedSQL(t *testing.T) {
	queries := map[string][]string{} // query name: its SQL, per engine
	for _, dir := range []string{"jobs/jobsdb", "mysql/myjobs/myjobsdb"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.sql.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no generated queries in %s: %v", dir, err)
		}
		for _, file := range files {
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				sql, err := strconv.Unquote(lit.Value)
				if err != nil || !strings.HasPrefix(sql, "-- name: ") {
					return true
				}
				name, _, _ := strings.Cut(strings.TrimPrefix(sql, "-- name: "), " ")
				queries[name] = append(queries[name], sql)
				return true
			})
		}
	}
	for _, m := range mutations {
		for _, e := range m.sql {
			found := false
			for name, sqls := range queries {
				for _, sql := range sqls {
					found = found || strings.HasPrefix(name, e.Query) && strings.Contains(sql, e.Old)
				}
			}
			if !found {
				t.Errorf("mutation %s: no generated query named %s… holds %q: the edit would change nothing", m.name, e.Query, e.Old)
			}
		}
	}
}

// TestSuiteCatchesMutations proves the suite can fail: it builds this
// package's tests with the queuegen_mutation tag, whose runtime carries
// deliberate bugs (queue/mutation_on.go), and with an overlay through
// which the generated packages' SQL can be edited at run time (a bug of
// the generated SQL), runs scenarios with each bug switched on, on each
// engine apart, and requires each to fail with the sign of that bug,
// within three runs where the scenario provokes the bug by chance. The
// worker processes the scenarios start are built with the same overlay.
func TestSuiteCatchesMutations(t *testing.T) {
	if os.Getenv("QUEUEGEN_MUTATION") != "" {
		t.Fatal("TestSuiteCatchesMutations runs the suite under mutations; it must not run under one itself")
	}
	dir := t.TempDir()
	overlay := sqlOverlay(t, dir)
	bin := filepath.Join(dir, "reliability.test")
	if out, err := exec.Command("go", "test", "-c", "-tags", "queuegen_mutation", "-overlay", overlay, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the suite with mutations: %v\n%s", err, out)
	}
	for _, m := range mutations {
		for _, engine := range dbtest.ThisRun() {
			if m.engines != nil && !slices.Contains(m.engines, engine) {
				continue
			}
			t.Run(m.name+"/"+engine, func(t *testing.T) {
				t.Parallel()
				edits, err := json.Marshal(m.sql)
				if err != nil {
					t.Fatal(err)
				}
				// A scenario that provokes the bug by chance (terminating
				// connections hits a completion only while it is on the
				// wire) gets three runs to show it.
				var out []byte
				for run := 1; run <= 3; run++ {
					cmd := exec.Command(bin, "-test.run", "^("+m.scenarios+")$/^("+engine+")$", "-test.count=1")
					cmd.Env = append(os.Environ(), "QUEUEGEN_MUTATION="+m.name, "QUEUEGEN_MUTATION_SQL="+string(edits),
						"QUEUEGEN_RELIABILITY_REPORT=", "GOFLAGS=-overlay="+overlay)
					if out, err = cmd.CombinedOutput(); err != nil {
						break
					}
					t.Logf("run %d of the suite passed on %s with the %s bug in the runtime", run, engine, m.name)
				}
				if err == nil {
					t.Fatalf("the suite passed three times on %s with the %s bug in the runtime:\n%s", engine, m.name, out)
				}
				if !strings.Contains(string(out), m.sign) && (m.orSign == "" || !strings.Contains(string(out), m.orSign)) {
					t.Errorf("the suite failed on %s with the %s bug, but not with its sign %q:\n%s", engine, m.name, m.sign, out)
				}
			})
		}
	}
}

// sqlQuery is a query constant of a file sqlc generated.
var sqlQuery = regexp.MustCompile("(?m)^const (\\w+) = (`[^`]*`)")

// sqlOverlay writes, into dir, an overlay for go build (-overlay) under
// which each query constant of the generated queries packages (jobsdb, myjobsdb)
// becomes a variable set at start from its text with the edits that
// QUEUEGEN_MUTATION_SQL (a JSON list of sqlEdit) names; without it, the
// queries are as generated. It returns the overlay file's path.
func sqlOverlay(t *testing.T, dir string) string {
	t.Helper()
	replace := map[string]string{}
	for _, pkg := range []struct{ dir, name string }{{"jobs/jobsdb", "jobsdb"}, {"mysql/myjobs/myjobsdb", "myjobsdb"}} {
		abs, err := filepath.Abs(pkg.dir)
		if err != nil {
			t.Fatal(err)
		}
		files, err := filepath.Glob(filepath.Join(abs, "*.sql.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no generated queries in %s (%v)", abs, err)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			mutated := sqlQuery.ReplaceAll(src, []byte("var $1 = mutateSQL($2)"))
			to := filepath.Join(dir, pkg.name+"-"+filepath.Base(f))
			if err := os.WriteFile(to, mutated, 0o644); err != nil {
				t.Fatal(err)
			}
			replace[f] = to
		}
		helper := filepath.Join(dir, pkg.name+"-mutation.go")
		if err := os.WriteFile(helper, []byte(fmt.Sprintf(mutateSQLSource, pkg.name)), 0o644); err != nil {
			t.Fatal(err)
		}
		replace[filepath.Join(abs, "zz_mutation.go")] = helper
	}
	data, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// mutateSQLSource is the function the overlay adds to each generated
// package (%s: its name).
const mutateSQLSource = `package %s

import (
	"encoding/json"
	"os"
	"strings"
)

// mutateSQL is query with the edits of QUEUEGEN_MUTATION_SQL for its name
// (the mutation tests of integration/reliability; never in a normal build).
func mutateSQL(query string) string {
	var edits []struct{ Query, Old, New string }
	if err := json.Unmarshal([]byte(os.Getenv("QUEUEGEN_MUTATION_SQL")), &edits); err != nil {
		return query
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(query, "-- name: "), " ")
	for _, e := range edits {
		if strings.HasPrefix(name, e.Query) {
			query = strings.ReplaceAll(query, e.Old, e.New)
		}
	}
	return query
}
`
