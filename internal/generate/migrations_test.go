package generate_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/generate"
	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/internal/pgtest"
	"github.com/queuegen/queuegen/internal/spec"
)

func TestMain(m *testing.M) { os.Exit(pgtest.RunMain(m)) }

// TestGoldenMigrationsApply applies each golden case's migrations with
// goose to a fresh database, rolls every one back, and applies them again:
// Up and Down both run, and Down leaves nothing behind. It covers the
// cases of the engines this run has (dbtest): SQL Server's only where
// QUEUEGEN_SQLSERVER_URL names a server, as none can run here; its
// migrations are grammar-checked by TestSQLServerGrammar in every run.
func TestGoldenMigrationsApply(t *testing.T) {
	engines := dbtest.AndSQLServer(dbtest.ThisRun())
	for _, specPath := range goldenCases(t) {
		name := filepath.Base(filepath.Dir(specPath))
		s, err := spec.Load(specPath)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(engines, s.Engine) {
			t.Logf("%s: not applied: no %s server in this run (set QUEUEGEN_SQLSERVER_URL to one)", name, s.Engine)
			continue
		}
		if distributed(s) {
			// create_distributed_table needs the Citus extension, which a
			// plain PostgreSQL server lacks.
			t.Logf("%s: not applied: its queues are distributed, and its migrations need a Citus cluster (QUEUEGEN_CITUS_URL, through the Citus harness)", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			out, err := generate.Generate(specPath, generate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			db := dbtest.New(t, s.Engine)
			m, err := migrate.Open(db.Address, filepath.Join(filepath.Dir(specPath), out.Model.MigrationsDir))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if err := m.Up(ctx, io.Discard); err != nil {
				t.Fatalf("up: %v", err)
			}
			tables := func() int { return db.Tables(t) }
			want := 0
			for _, tb := range out.Model.Catalog.Tables() {
				want++
				if tb.PartitionBy != "" && s.Engine == dburl.PostgreSQL {
					want++ // its default partition (MySQL's partitions are not tables)
				}
			}
			if got := tables(); got != want {
				t.Errorf("after up: %d tables, want %d", got, want)
			}
			for {
				v, err := m.Version(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if v == 0 {
					break
				}
				if err := m.Down(ctx, io.Discard); err != nil {
					t.Fatalf("down from %d: %v", v, err)
				}
			}
			if got := tables(); got != 0 {
				t.Errorf("after every down: %d tables left", got)
			}
			if err := m.Up(ctx, io.Discard); err != nil {
				t.Fatalf("up again: %v", err)
			}
		})
	}
}

// distributed reports whether a spec has a distributed queue (Citus).
func distributed(s *spec.Spec) bool {
	for _, q := range s.Queues {
		if q.Distribute.Set() {
			return true
		}
	}
	return false
}
