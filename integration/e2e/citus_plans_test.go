//go:build citus

package e2e_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queuegen/queuegen/internal/dbtest"
	"github.com/queuegen/queuegen/internal/migrate"
)

// The plans a distributed queue's statements may have besides a router
// plan (one shard), each named in the README's "Citus" with its reason.
var (
	// multiShard statements run on every shard, and the coordinator adds
	// up or merges their results: the counts (Depth, DepthAtMost) and the
	// release of a restarting node's jobs, which names a node, not a
	// bucket (once per worker start).
	multiShard = []string{"Depth", "DepthAtMost", "ReleaseNode"}
	// onCoordinator statements touch no distributed table and run on the
	// coordinator alone: the sequence (ids), the maintenance lock, the
	// wake-up and the payload columns' defaults (computed from no table).
	onCoordinator = []string{"ReserveIds", "LockMaintenance", "Notify", "Defaults"}
)

// TestCitusPlans EXPLAINs every statement queuegen generated for the
// distributed queues of the e2e suite's Citus spec, on the cluster, with
// bound parameters (a bucket among them, as the accessor binds it), and
// checks its plan: a router plan on one shard (Task Count: 1), except for
// the statements named in multiShard and onCoordinator, which must have
// exactly the plan named there. It catches a statement that loses its
// bucket predicate (Citus then plans it on every shard, or refuses it), a
// clock or CASE that Citus refuses, and a multi-shard statement that the
// README does not name.
func TestCitusPlans(t *testing.T) {
	ctx := context.Background()
	db := dbtest.New(t, dbtest.Citus)
	m, err := migrate.Open(db.Address, migrations[dbtest.Citus], migrate.Schema(db.Schema))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, db.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	files, err := filepath.Glob("citus/cjobs/cjobsdb/*.sql.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no generated queries of the Citus spec: %v", err)
	}
	constRe := regexp.MustCompile("(?s)const \\w+ = `-- name: (\\w+) :\\w+\n(.*?)`")
	taskRe := regexp.MustCompile(`Task Count: (\d+)`)
	seen := 0
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		queue := strings.TrimSuffix(filepath.Base(file), ".sql.go")
		goQueue := strings.ToUpper(queue[:1]) + queue[1:]
		for _, match := range constRe.FindAllSubmatch(src, -1) {
			name, sql := string(match[1]), string(match[2])
			op := strings.TrimSuffix(name, goQueue)
			t.Run(name, func(t *testing.T) {
				args, err := sampleArgs(ctx, conn, sql)
				if err != nil {
					t.Fatalf("%s: %v\n%s", name, err, sql)
				}
				plan, err := explain(ctx, conn, sql, args)
				if err != nil {
					t.Fatalf("EXPLAIN %s: %v\n%s", name, err, sql)
				}
				counts := taskRe.FindAllStringSubmatch(plan, -1)
				switch {
				case slices.Contains(onCoordinator, op):
					if len(counts) != 0 {
						t.Errorf("%s should run on the coordinator alone, but its plan has a distributed scan:\n%s", name, plan)
					}
				case slices.Contains(multiShard, op):
					if len(counts) == 0 || counts[0][1] == "1" {
						t.Errorf("%s is named a multi-shard statement, but its plan is not:\n%s", name, plan)
					}
				default:
					if len(counts) == 0 {
						t.Errorf("%s has no distributed plan:\n%s", name, plan)
					}
					for _, c := range counts {
						if n, _ := strconv.Atoi(c[1]); n != 1 {
							t.Errorf("%s runs %d tasks, want a router plan on one shard (Task Count: 1):\n%s", name, n, plan)
							break
						}
					}
				}
			})
			seen++
		}
	}
	t.Logf("EXPLAINed %d statements: all router plans on one shard but %v (multi-shard) and %v (coordinator)", seen, multiShard, onCoordinator)
	if seen < 40 {
		t.Fatalf("EXPLAINed %d statements; the Citus spec's queues have more", seen)
	}
}

// explain is the text of EXPLAIN of sql with args bound (a custom plan,
// as the accessor's statements get), in a transaction rolled back after.
func explain(ctx context.Context, conn *pgx.Conn, sql string, args []any) (string, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, "EXPLAIN "+sql, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		b.WriteString(line + "\n")
	}
	return b.String(), rows.Err()
}

// sampleArgs binds a value of each parameter's type, as PostgreSQL infers
// it: a bucket (smallint) 3, an id of that bucket, a time now, and so on.
func sampleArgs(ctx context.Context, conn *pgx.Conn, sql string) ([]any, error) {
	sd, err := conn.Prepare(ctx, "", sql)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var args []any
	for _, oid := range sd.ParamOIDs {
		var v any
		switch oid {
		case pgtype.Int2OID:
			v = int16(3)
		case pgtype.Int4OID:
			v = int32(10)
		case pgtype.Int8OID:
			v = int64(5*1024 + 3)
		case pgtype.TextOID, pgtype.VarcharOID:
			v = "node"
		case pgtype.BoolOID:
			v = false
		case pgtype.TimestamptzOID:
			v = now
		case pgtype.IntervalOID:
			v = time.Minute
		case pgtype.JSONBOID, pgtype.JSONOID:
			v = "{}"
		case pgtype.ByteaOID:
			v = []byte{}
		case pgtype.Int2ArrayOID:
			v = []int16{3}
		case pgtype.Int4ArrayOID:
			v = []int32{1}
		case pgtype.Int8ArrayOID:
			v = []int64{5*1024 + 3}
		case pgtype.TextArrayOID:
			v = []string{"x"}
		case pgtype.TimestamptzArrayOID:
			v = []time.Time{now}
		case 1187: // interval[]
			v = []time.Duration{time.Minute}
		default:
			v = nil
		}
		args = append(args, v)
	}
	return args, nil
}
