package generate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/queuegen/queuegen/internal/generate"
)

const refusalBase = `version: 1
package: {name: jobs, dir: jobs}
migrations: migrations
queries: queries
queues:
  - name: email
    payload:
      columns:
        recipient: text
        subject: {type: varchar(100), nullable: true}
        count: integer
        tags: {type: "varchar(10)[]", nullable: true}
  - name: sms
    inherits: false
    payload:
      columns:
        phone: text
`

// startProject generates refusalBase into a new project and returns its
// spec path.
func startProject(t *testing.T) string {
	t.Helper()
	specPath := filepath.Join(projectDir(t), "queuegen.yaml")
	if err := os.WriteFile(specPath, []byte(refusalBase), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := generate.Generate(specPath, generate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write(); err != nil {
		t.Fatal(err)
	}
	return specPath
}

// TestRefusals: each change queuegen will not write is refused with a
// message naming it, why, and the manual path, and nothing is written.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name, from, to string
		want           string
	}{
		{"drop queue", "  - name: sms\n    inherits: false\n    payload:\n      columns:\n        phone: text\n", "",
			"  - drop queue sms: the spec no longer has it, and dropping table sms_queue loses its jobs\n" +
				"    what to do: generate with --allow-drop (go tool queuegen generate --allow-drop, or queuegen generate --allow-drop) to drop it; if the queue was renamed, say so with renamed_from: sms on the new queue"},
		{"drop column", "        count: integer\n", "",
			"  - table email_queue: drop column count: the spec no longer has it, and dropping a column loses its data\n" +
				"    what to do: generate with --allow-drop (go tool queuegen generate --allow-drop, or queuegen generate --allow-drop) to drop it; if it was renamed, say so with renamed_from: count on the new column"},
		{"not null without default", "        count: integer\n", "        count: integer\n        body: text\n",
			"  - table email_queue: add column body text NOT NULL: rows already in the table would have no value for it\n" +
				"    what to do: give it a default in the spec (default: …; it can be removed in a later change), or make it nullable (nullable: true)"},
		{"volatile default", "        count: integer\n", "        count: integer\n        ref: {type: uuid, default_sql: gen_random_uuid()}\n",
			"  - table email_queue: add column ref uuid: its default gen_random_uuid() is volatile: PostgreSQL evaluates it for every existing row, rewriting the table under an exclusive lock\n" +
				"    what to do: write this migration by hand: generate with --manual (go tool queuegen generate --manual, or queuegen generate --manual) for a new migration file to fill in (the spec's schema is recorded as its result); or add it nullable first, backfill it in batches, then set the default"},
		{"nullable to not null", "subject: {type: varchar(100), nullable: true}", "subject: varchar(100)",
			"  - table email_queue: column subject becomes NOT NULL: rows already in the table may hold NULL there\n" +
				"    what to do: write this migration by hand: generate with --manual (go tool queuegen generate --manual, or queuegen generate --manual) for a new migration file to fill in (the spec's schema is recorded as its result): UPDATE the NULLs to a value, then ALTER TABLE … ALTER COLUMN subject SET NOT NULL"},
		{"type rewrite", "count: integer", "count: bigint",
			"  - table email_queue: column count type integer → bigint: PostgreSQL cannot make this change in place: it would rewrite the table under an exclusive lock, or fail on existing values\n" +
				"    what to do: write this migration by hand: generate with --manual (go tool queuegen generate --manual, or queuegen generate --manual) for a new migration file to fill in (the spec's schema is recorded as its result); for a large queue, add a new column, backfill it in batches, then switch"},
		{"array type", "varchar(10)[]", "varchar(20)[]",
			"  - table email_queue: column tags type varchar(10)[] → varchar(20)[]: PostgreSQL converts an array column element by element, rewriting the table under an exclusive lock, whatever the element types"},
		{"narrowing", "varchar(100)", "varchar(50)",
			"  - table email_queue: column subject type varchar(100) → varchar(50): PostgreSQL cannot make this change in place"},
		{"inherits", "  - name: sms\n    inherits: false\n", "  - name: sms\n",
			"  - queue sms: inherits false → true: moving a table into or out of INHERITS needs its rows copied to a new table\n" +
				"    what to do: write this migration by hand: generate with --manual (go tool queuegen generate --manual, or queuegen generate --manual) for a new migration file to fill in (the spec's schema is recorded as its result): create the new table, copy the rows, drop the old one"},
		{"schema", "queries: queries\n", "queries: queries\nschema: jobs\n",
			"  - schema public → jobs: moving every table to another schema is not a change queuegen writes"},
		{"base rename", "queries: queries\n", "queries: queries\nbase: {table: job_base}\n",
			"  - base table base_queue → job_base: renaming the base table is not a change queuegen writes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			specPath := startProject(t)
			dir := filepath.Dir(specPath)
			before := listFiles(t, dir)
			changed := strings.Replace(refusalBase, c.from, c.to, 1)
			if changed == refusalBase {
				t.Fatalf("the case does not change the spec")
			}
			os.WriteFile(specPath, []byte(changed), 0o644)
			_, err := generate.Generate(specPath, generate.Options{})
			if err == nil {
				t.Fatal("the change was not refused")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "queuegen cannot turn these spec changes into a safe migration:\n") || !strings.HasSuffix(msg, "\nNothing was written.") {
				t.Errorf("message frame:\n%s", msg)
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("message lacks the expected refusal.\nwant:\n%s\ngot:\n%s", c.want, msg)
			}
			if diff := cmp.Diff(before, listFiles(t, dir)); diff != "" {
				t.Errorf("a refused change touched files:\n%s", diff)
			}
		})
	}
}

// TestManualMigration: for a refused change, --manual writes a migration
// for the user to fill in and records the spec's schema as its result;
// the next generate finds nothing to do.
func TestManualMigration(t *testing.T) {
	specPath := startProject(t)
	os.WriteFile(specPath, []byte(strings.Replace(refusalBase, "count: integer", "count: bigint", 1)), 0o644)
	out, err := generate.Generate(specPath, generate.Options{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write(); err != nil {
		t.Fatal(err)
	}
	manual := filepath.Join(filepath.Dir(specPath), "migrations", "00002_manual.sql")
	data, err := os.ReadFile(manual)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "column count type integer → bigint") || strings.Contains(string(data), "Code generated") {
		t.Errorf("manual migration:\n%s", data)
	}
	// The user fills it in; queuegen does not object to the edit.
	os.WriteFile(manual, append(data, "-- filled in\n"...), 0o644)
	again, err := generate.Generate(specPath, generate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if changes, err := again.Plan(); err != nil || len(changes) != 0 {
		t.Errorf("after the manual migration, generate wants %v, %v", changes, err)
	}
}

// TestManualMigrationAlone: --manual refuses a spec change that mixes a
// refused change with ones queuegen writes itself: the hand-written stub
// would be recorded as making all of them, and the new column would reach
// no migration at all.
func TestManualMigrationAlone(t *testing.T) {
	specPath := startProject(t)
	dir := filepath.Dir(specPath)
	before := listFiles(t, dir)
	changed := strings.Replace(refusalBase, "count: integer", "count: bigint\n        extra: {type: text, nullable: true}", 1)
	os.WriteFile(specPath, []byte(changed), 0o644)
	_, err := generate.Generate(specPath, generate.Options{Manual: true})
	if err == nil || !strings.Contains(err.Error(), "make those first") || !strings.Contains(err.Error(), "extra") {
		t.Fatalf("--manual with a writable change beside the refused one = %v; want a refusal naming the writable one", err)
	}
	if diff := cmp.Diff(before, listFiles(t, dir)); diff != "" {
		t.Errorf("a refused --manual touched files:\n%s", diff)
	}
}

func listFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "queuegen.yaml" {
			data, _ := os.ReadFile(p)
			files[p] = string(data)
		}
		return nil
	})
	return files
}
