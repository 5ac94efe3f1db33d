package generate_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/generate"
	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/internal/model"
	"github.com/queuegen/queuegen/internal/pgtest"
)

// revision is one step of testdata/evolution: a spec and what generating
// it produced.
type revision struct {
	name  string
	model *model.Model
	// version is the last migration version after this revision.
	version int64
}

// evolve generates every revision of testdata/evolution in order into one
// project directory, as a team would over time, and returns the revisions.
// Each revision must add migrations without touching earlier ones, and a
// second generate must add nothing.
func evolve(t *testing.T, project string) []revision { return evolveOn(t, project, "") }

// evolveOn is evolve with the revisions written for engine (the
// PostgreSQL revisions with its engine key, without notify, fair_by, limits and rate
// and with keep for archive, which only PostgreSQL serves), or as they
// are when engine is "".
func evolveOn(t *testing.T, project, engine string) []revision {
	t.Helper()
	specs, _ := filepath.Glob("../../testdata/evolution/rev*.yaml")
	if len(specs) < 6 {
		t.Fatalf("want at least six revisions, found %d", len(specs))
	}
	sort.Strings(specs)
	specPath := filepath.Join(project, "queuegen.yaml")
	var revs []revision
	emitted := map[string][]byte{}
	for _, src := range specs {
		data, _ := os.ReadFile(src)
		if engine != "" {
			data = notifyLine.ReplaceAll(data, nil)
			// Only PostgreSQL archives (elsewhere the jobs are kept) and
			// claims fairly.
			data = []byte(strings.ReplaceAll(string(data), "on_success: archive", "on_success: keep"))
			data = fairLine.ReplaceAll(data, nil)
			data = limitsLine.ReplaceAll(data, nil)
			data = rateLine.ReplaceAll(data, nil)
			data = backlogLine.ReplaceAll(data, nil)
			data = []byte(strings.Replace(string(data), "version: 1\n", "version: 1\nengine: "+engine+"\n", 1))
		}
		if err := os.WriteFile(specPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(src), ".yaml")
		out, err := generate.Generate(specPath, generate.Options{AllowDrop: strings.Contains(name, "allow_drop")})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := out.Write(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, _ := generate.Generate(specPath, generate.Options{})
		if changes, err := again.Plan(); err != nil || len(changes) != 0 {
			t.Fatalf("%s: generating twice changed %v, %v", name, changes, err)
		}
		files, _ := filepath.Glob(filepath.Join(project, "migrations", "*.sql"))
		for p, data := range emitted {
			if now, _ := os.ReadFile(p); string(now) != string(data) {
				t.Errorf("%s: rewrote %s", name, filepath.Base(p))
			}
		}
		for _, p := range files {
			emitted[p], _ = os.ReadFile(p)
		}
		revs = append(revs, revision{name: name, model: out.Model, version: int64(len(files))})
	}
	return revs
}

// TestEvolutionGolden compares every migration the revisions emitted, and
// the final state file, with testdata/evolution/want (-update rewrites).
func TestEvolutionGolden(t *testing.T) {
	t.Run("postgresql", func(t *testing.T) { evolutionGolden(t, "", "want") })
	t.Run("sqlserver", func(t *testing.T) { evolutionGolden(t, "sqlserver", "want_sqlserver") })
}

// notifyLine is a spec line asking for notify, which only PostgreSQL has;
// fairLine, limitsLine, rateLine and backlogLine ask for fair_by,
// limits, rate and backlog, likewise.
var (
	backlogLine = regexp.MustCompile(`(?m)^ *backlog: .*\n`)
	notifyLine  = regexp.MustCompile(`(?m)^ *notify: .*\n`)
	fairLine    = regexp.MustCompile(`(?m)^ *fair_by: .*\n`)
	limitsLine  = regexp.MustCompile(`(?m)^ *limits: .*\n`)
	rateLine    = regexp.MustCompile(`(?m)^ *rate: .*\n`)
)

// evolutionGolden compares the migrations the revisions emit for engine
// with those in testdata/evolution/<dir>.
func evolutionGolden(t *testing.T, engine, dir string) {
	project := projectDir(t)
	evolveOn(t, project, engine)
	want := "../../testdata/evolution/" + dir
	got, _ := filepath.Glob(filepath.Join(project, "migrations", "*"))
	if *update {
		os.RemoveAll(want)
		os.MkdirAll(want, 0o755)
		for _, p := range got {
			data, _ := os.ReadFile(p)
			os.WriteFile(filepath.Join(want, filepath.Base(p)), data, 0o644)
		}
		return
	}
	wantFiles, _ := filepath.Glob(filepath.Join(want, "*"))
	if len(wantFiles) != len(got) {
		t.Errorf("%d files emitted, %d golden", len(got), len(wantFiles))
	}
	for _, p := range got {
		data, _ := os.ReadFile(p)
		golden, err := os.ReadFile(filepath.Join(want, filepath.Base(p)))
		if err != nil {
			t.Errorf("%s: no golden copy (go test ./internal/generate -run TestEvolutionGolden -update)", filepath.Base(p))
			continue
		}
		if diff := cmp.Diff(string(golden), string(data)); diff != "" {
			t.Errorf("%s (-golden +emitted):\n%s", filepath.Base(p), diff)
		}
	}
}

// TestEvolutionOnALiveDatabase applies the revisions' migrations one
// revision at a time to a database holding jobs, then checks that
//   - the schema equals a fresh database migrated from the final spec in
//     one go (columns, types, nullability, defaults, indexes, constraints,
//     inheritance, registry);
//   - every job pushed before each step is still there and claimable, by
//     the final generated claim query;
//   - each Down migration takes the schema back to the previous
//     revision's exactly.
//   - schema.sql, which sqlc reads, describes the same schema.
func TestEvolutionOnALiveDatabase(t *testing.T) {
	ctx := context.Background()
	project := projectDir(t)
	revs := evolve(t, project)
	final := revs[len(revs)-1].model

	url := pgtest.URL(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	m, err := migrate.Open(url, filepath.Join(project, "migrations"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	snapshots := map[int64]schemaSnapshot{0: snapshot(t, conn)}
	pushed := map[string]int{} // by queue name, following renames
	for _, rev := range revs {
		if err := upTo(ctx, url, filepath.Join(project, "migrations"), rev.version); err != nil {
			t.Fatalf("%s: up: %v", rev.name, err)
		}
		snapshots[rev.version] = snapshot(t, conn)
		for _, q := range rev.model.Catalog.Queues {
			if r := q.RenamedFrom; r != "" && pushed[r] > 0 {
				pushed[q.Name] += pushed[r]
				delete(pushed, r)
			}
		}
		for name := range pushed {
			if !hasQueue(rev.model, name) {
				delete(pushed, name) // dropped with its table
			}
		}
		for _, q := range rev.model.Queues {
			for range 3 {
				push(t, conn, rev.model, q)
			}
			pushed[q.Name] += 3
		}
	}

	// The same schema as a fresh install of the final spec.
	fresh := projectDir(t)
	data, _ := os.ReadFile(filepath.Join(project, "queuegen.yaml"))
	os.WriteFile(filepath.Join(fresh, "queuegen.yaml"), data, 0o644)
	freshOut, err := generate.Generate(filepath.Join(fresh, "queuegen.yaml"), generate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := freshOut.Write(); err != nil {
		t.Fatal(err)
	}
	freshURL := pgtest.URL(t)
	if err := upTo(ctx, freshURL, filepath.Join(fresh, "migrations"), goose.MaxVersion); err != nil {
		t.Fatal(err)
	}
	freshConn, err := pgx.Connect(ctx, freshURL)
	if err != nil {
		t.Fatal(err)
	}
	defer freshConn.Close(ctx)
	if diff := cmp.Diff(snapshot(t, freshConn), snapshots[revs[len(revs)-1].version]); diff != "" {
		t.Errorf("schema after every revision differs from a fresh install of the final spec (-fresh +evolved):\n%s", diff)
	}

	// schema.sql (what sqlc compiles against) agrees with the migrations.
	schemaURL := pgtest.URL(t)
	schemaConn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer schemaConn.Close(ctx)
	schemaSQL, _ := os.ReadFile(filepath.Join(project, "queries", "schema.sql"))
	if _, err := schemaConn.Exec(ctx, string(schemaSQL)); err != nil {
		t.Fatal(err)
	}
	evolved := snapshots[revs[len(revs)-1].version]
	evolved.Registry = nil // schema.sql has the tables, not the registry rows
	if diff := cmp.Diff(snapshot(t, schemaConn), evolved); diff != "" {
		t.Errorf("schema.sql differs from what the migrations build (-schema.sql +migrations):\n%s", diff)
	}

	// Every job pushed along the way is there and claimable now.
	for _, q := range final.Queues {
		claimed := claimAll(t, conn, project, q)
		if claimed != pushed[q.Name] {
			t.Errorf("queue %s: claimed %d jobs, %d were pushed across the revisions", q.Name, claimed, pushed[q.Name])
		}
	}

	// Down, one migration at a time, back to nothing.
	for v := revs[len(revs)-1].version; v > 0; v-- {
		if err := m.Down(ctx, io.Discard); err != nil {
			t.Fatalf("down from %d: %v", v, err)
		}
		want, ok := snapshots[v-1]
		if !ok {
			continue // inside a revision that emitted several migrations
		}
		if diff := cmp.Diff(want, snapshot(t, conn)); diff != "" {
			t.Errorf("down from version %d does not restore the schema of version %d (-want +got):\n%s", v, v-1, diff)
		}
	}
}

func hasQueue(m *model.Model, queue string) bool {
	for _, q := range m.Queues {
		if q.Name == queue {
			return true
		}
	}
	return false
}

func upTo(ctx context.Context, url, dir string, version int64) error {
	mg, err := migrate.Open(url, dir)
	if err != nil {
		return err
	}
	defer mg.Close()
	return mg.UpTo(ctx, version)
}

// schemaSnapshot is what a schema comparison looks at, by name (column
// order is not compared: ALTER TABLE ADD COLUMN appends).
type schemaSnapshot struct {
	Columns, Indexes, Constraints, Inherits, Triggers, Functions, Options, Registry []string
}

func snapshot(t *testing.T, conn *pgx.Conn) schemaSnapshot {
	t.Helper()
	ctx := context.Background()
	list := func(sql string) []string {
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			if strings.Contains(err.Error(), "queuegen_queues") {
				return nil
			}
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			if strings.Contains(err.Error(), "does not exist") {
				return nil
			}
			t.Fatal(err)
		}
		if len(out) == 0 {
			return nil
		}
		sort.Strings(out)
		return out
	}
	// Tables, partitioned ones (an archive) among them, but not their
	// partitions: an archive's default partition is left out of
	// schema.sql, and PostgreSQL names the partitions' indexes itself.
	const userTables = `c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace) AND c.relname NOT IN ('goose_db_version', 'queuegen_db_version') AND c.relkind IN ('r', 'p') AND NOT c.relispartition`
	return schemaSnapshot{
		Columns: list(`SELECT c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END || coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE a.attnum > 0 AND NOT a.attisdropped AND ` + userTables),
		Indexes: list(`SELECT i.indexdef FROM pg_indexes i JOIN pg_class c ON c.relname = i.tablename AND c.relnamespace = i.schemaname::regnamespace
			WHERE ` + userTables),
		Constraints: list(`SELECT c.relname || ' ' || k.conname || ' ' || pg_get_constraintdef(k.oid)
			FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid WHERE ` + userTables),
		Inherits:  list(`SELECT i.inhrelid::regclass || ' INHERITS ' || i.inhparent::regclass FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE ` + userTables),
		Triggers:  list(`SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal`),
		Options:   list(`SELECT c.relname || ' ' || array_to_string(c.reloptions, ',') FROM pg_class c WHERE c.reloptions IS NOT NULL AND ` + userTables),
		Functions: list(`SELECT p.oid::regprocedure::text || ' ' || md5(p.prosrc) FROM pg_proc p WHERE p.pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)`),
		Registry:  list(`SELECT name || ' ' || table_name || ' ' || mode FROM queuegen_queues`),
	}
}

// push inserts one job into q's table with plain SQL (the revision's Go
// code is not compiled here), filling every payload column.
func push(t *testing.T, conn *pgx.Conn, m *model.Model, q *model.Queue) {
	t.Helper()
	cols := []string{"max_attempts"}
	vals := []string{"5"}
	payload := q.Payload.Columns
	if q.Table.Inherits != "" {
		for _, c := range m.Catalog.Base.Columns {
			if !isBookkeeping(c.Name) {
				payload = append([]*catalog.Column{c}, payload...)
			}
		}
	}
	for _, c := range payload {
		cols = append(cols, c.Name)
		vals = append(vals, sampleValue(c.Type))
	}
	into := q.QName
	if q.Backlog != nil {
		into = q.QBacklog // where pushes go
	}
	sql := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", into, strings.Join(cols, ", "), strings.Join(vals, ", "))
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("push into %s: %v", q.Table.Name, err)
	}
}

func isBookkeeping(name string) bool {
	for _, n := range []string{"id", "state", "attempt", "max_attempts", "priority", "run_after", "created_at", "attempted_at", "finished_at", "locked_by", "locked_until", "errors", "unique_key"} {
		if n == name {
			return true
		}
	}
	return false
}

func sampleValue(sqlType string) string {
	switch {
	case strings.HasSuffix(sqlType, "[]"):
		return "'{}'"
	case strings.HasPrefix(sqlType, "varchar"), sqlType == "text":
		return "'v'"
	case sqlType == "jsonb":
		return `'{"report_id": 1}'`
	case sqlType == "boolean":
		return "true"
	default:
		return "1"
	}
}

// claimAll runs the queue's final generated claim query (the SQL sqlc
// compiled, read from its Go file) until it returns nothing.
func claimAll(t *testing.T, conn *pgx.Conn, project string, q *model.Queue) int {
	t.Helper()
	ctx := context.Background()
	src, err := os.ReadFile(filepath.Join(project, "jobs", "jobsdb", q.Name+".sql.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)const claim" + q.GoName + " = `(.*?)`").FindSubmatch(src)
	if m == nil {
		t.Fatalf("no claim query for %s", q.Name)
	}
	var schedule []byte
	if q.Backlog != nil {
		m := regexp.MustCompile("(?s)const schedule" + q.GoName + " = `(.*?)`").FindSubmatch(src)
		if m == nil {
			t.Fatalf("no scheduler step for %s", q.Name)
		}
		schedule = m[1]
	}
	total := 0
	for {
		moved := int64(0)
		if schedule != nil {
			tag, err := conn.Exec(ctx, string(schedule), nil)
			if err != nil {
				t.Fatalf("schedule %s: %v", q.Name, err)
			}
			moved = tag.RowsAffected()
		}
		var rows pgx.Rows
		if q.Lease {
			rows, err = conn.Query(ctx, string(m[1]), nil, "test-node", "1 minute", 100)
		} else {
			rows, err = conn.Query(ctx, string(m[1]), nil, 100)
		}
		if err != nil {
			t.Fatalf("claim %s: %v", q.Name, err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatalf("claim %s: %v", q.Name, err)
		}
		if n == 0 && moved == 0 {
			return total
		}
		total += n
		if !q.Lease {
			return total // transaction mode: claimed rows stay available; one pass counts them
		}
		if q.Limited() {
			// Finish the batch, freeing its slots for the next.
			if _, err := conn.Exec(ctx, "UPDATE "+q.QName+" SET state = 'succeeded', finished_at = now(), locked_by = NULL, locked_until = NULL WHERE state = 'running'"); err != nil {
				t.Fatal(err)
			}
		}
	}
}
