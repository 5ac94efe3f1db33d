package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/migrate"
)

// TestStatsCountsTheArchive: stats' last hour counts, for a queue with
// an archive (on_success: archive), the jobs of the archive that
// succeeded in the hour and the errors they recorded in it, not those of
// two hours ago, on each engine that has the archive (the golden cases'
// ledger queue).
func TestStatsCountsTheArchive(t *testing.T) {
	for _, c := range []struct{ engine, dir, insert string }{
		{dburl.PostgreSQL, "../../testdata/archive/db/migrations",
			`INSERT INTO ledger_queue_archive (id, state, attempt, max_attempts, errors, failures, finished_at, payload)
VALUES ($1, 'succeeded', 2, 3, '{boom}', $2::jsonb, $3, '{}')`},
		{dburl.MySQL, "../../testdata/mysql_archive/db/migrations",
			`INSERT INTO ledger_queue_archive (id, state, attempt, max_attempts, errors, failures, finished_at, run_after, created_at, entry)
VALUES (?, 'succeeded', 2, 3, JSON_ARRAY('boom'), ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), '{}')`},
	} {
		t.Run(c.engine, func(t *testing.T) {
			t.Parallel()
			db := dbtest.New(t, c.engine)
			m, err := migrate.Open(db.Address, c.dir)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if err := m.Up(context.Background(), io.Discard); err != nil {
				t.Fatal(err)
			}
			for i, ago := range []time.Duration{10 * time.Minute, 2 * time.Hour} {
				at := time.Now().UTC().Add(-ago)
				failures := `[{"at": "` + at.Add(-time.Minute).Format("2006-01-02T15:04:05.000000Z") + `", "attempt": 1, "error": 0}]`
				if _, err := db.SQL.Exec(c.insert, i+1, failures, at); err != nil {
					t.Fatal(err)
				}
			}
			code, out, stderr := run(t, "stats", "--db", db.Address, "--json")
			var stats []struct {
				Queue     string `json:"queue"`
				Failures  *int64 `json:"failures_last_hour"`
				Succeeded *int64 `json:"succeeded_last_hour"`
			}
			if code != 0 || json.Unmarshal([]byte(out), &stats) != nil {
				t.Fatalf("stats --json = %d:\n%s%s", code, out, stderr)
			}
			found := false
			for _, s := range stats {
				if s.Queue != "ledger" {
					continue
				}
				found = true
				if s.Failures == nil || *s.Failures != 1 || s.Succeeded == nil || *s.Succeeded != 1 {
					t.Errorf("ledger's hour, want 1 failure and 1 success from the archive: %s", out)
				}
			}
			if !found {
				t.Errorf("no ledger in stats: %s", out)
			}
		})
	}
}
