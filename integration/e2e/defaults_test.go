package e2e_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/queue"
)

// TestColumnDefaults: a field whose column has a default, left unset,
// gets the default the migration declared, in Push and in PushMany; set,
// it keeps its value. Values (text, integer, numeric) and SQL expressions
// (now(), gen_random_uuid()) alike; a nil NOT NULL jsonb is JSON null.
func TestColumnDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewImageQueue(db)

	// The catalog holds the defaults as written: a value is a literal of
	// the type, an expression is evaluated at insert.
	want := map[string]string{"format": "'webp'::text", "quality": "80", "ratio": "1.5", "taken_at": "now()", "ref": "gen_random_uuid()", "label": "'untitled'::text"}
	rows, err := db.Query(ctx, `SELECT a.attname, pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d
		JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid = 'image_queue'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var name, expr string
		rows.Scan(&name, &expr)
		got[name] = expr
	}
	for col, expr := range want {
		if got[col] != expr {
			t.Errorf("default of %s = %q, want %q", col, got[col], expr)
		}
	}

	before := time.Now().Add(-time.Minute)
	check := func(name string, j jobs.ImagePayload, set bool) {
		t.Helper()
		if set {
			if *j.Format != "png" || *j.Quality != 95 || *j.Label != "mine" {
				t.Errorf("%s: set fields changed: %+v", name, j)
			}
			return
		}
		ratio, _ := j.Ratio.Float64Value()
		if *j.Format != "webp" || *j.Quality != 80 || ratio.Float64 != 1.5 || *j.Label != "untitled" ||
			j.TakenAt.Before(before) || !j.Ref.Valid || string(j.Meta) != "null" {
			t.Errorf("%s: unset fields did not get their defaults: format %q quality %d ratio %v taken %v ref %v label %q meta %s",
				name, *j.Format, *j.Quality, ratio.Float64, j.TakenAt, j.Ref, *j.Label, j.Meta)
		}
	}
	setPayload := func() jobs.ImagePayload {
		return jobs.ImagePayload{URL: "u", Format: ptr("png"), Quality: ptr(int32(95)), Label: ptr("mine"), Meta: json.RawMessage(`{}`)}
	}

	res, err := q.Push(ctx, jobs.ImagePayload{URL: "u"})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := q.Get(ctx, res.ID)
	check("Push, unset", j.Payload, false)
	res, err = q.Push(ctx, setPayload())
	if err != nil {
		t.Fatal(err)
	}
	j, _ = q.Get(ctx, res.ID)
	check("Push, set", j.Payload, true)

	// PushMany, mixing set and unset rows, with RunAfter and without.
	for _, at := range []bool{false, true} {
		if _, err := db.Exec(ctx, "DELETE FROM image_queue"); err != nil {
			t.Fatal(err)
		}
		batch := []jobs.ImagePayload{{URL: "a"}, setPayload(), {URL: "b"}, setPayload()}
		var err error
		if at {
			_, err = q.PushMany(ctx, batch, queue.RunAfter(time.Now().Add(-time.Second)))
		} else {
			_, err = q.PushMany(ctx, batch)
		}
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := q.Claim(ctx, "n", 10)
		if err != nil || len(claimed) != 4 {
			t.Fatalf("claimed %d, %v", len(claimed), err)
		}
		refs := map[pgtype.UUID]bool{}
		for _, c := range claimed {
			check("PushMany", c.Payload, c.Payload.URL == "u")
			refs[c.Payload.Ref] = true
		}
		if len(refs) != 4 {
			t.Errorf("gen_random_uuid() gave %d distinct values to 4 jobs", len(refs))
		}
	}
}
