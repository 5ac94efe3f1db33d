package evolve

import (
	"strings"
	"testing"
)

// TestCheckFilledOldStubs: a stub written by an earlier release, whose
// placeholders ran as no-ops, is refused too, with its changes named and
// without the advice to run --manual it carried.
func TestCheckFilledOldStubs(t *testing.T) {
	old := `-- Written by hand. queuegen generate --manual created this file and recorded
-- the spec's schema as the result of applying it: write the SQL that takes
-- the database there, for these changes queuegen would not write itself:
--   - table ping_queue: column n type integer → bigint
--     ` + manualPath + `; for a large queue, add a new column, backfill it in batches, then switch
--
-- queuegen never edits this file; review it like any hand-written migration.

-- +goose Up
SELECT 'write the Up migration' AS todo WHERE false;

-- +goose Down
SELECT 'write the Down migration' AS todo WHERE false;
`
	err := CheckFilled("migrations/00004_manual.sql", []byte(old), "Up")
	if err == nil || !strings.Contains(err.Error(), "its Up section still holds") ||
		!strings.Contains(err.Error(), "- table ping_queue: column n type integer → bigint (for a large queue, add a new column, backfill it in batches, then switch)") ||
		strings.Contains(err.Error(), "--manual (") {
		t.Errorf("an old unfilled stub = %v", err)
	}
	filled := strings.Replace(old, "SELECT 'write the Up migration' AS todo WHERE false;", "ALTER TABLE ping_queue ALTER COLUMN n TYPE bigint;", 1)
	if err := CheckFilled("m.sql", []byte(filled), "Up"); err != nil {
		t.Errorf("a filled Up section = %v", err)
	}
	if got := Unfilled([]byte(filled)); len(got) != 1 || got[0] != "Down" {
		t.Errorf("Unfilled of a stub with only Down left = %v", got)
	}
}
