//go:build citus

package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestCitusURL checks that CitusURL gives a schema of its own on the
// coordinator, that a table distributed there reaches the workers' shards,
// and that the schema is gone, on every node, after the test. It catches a
// harness that leaves tests sharing tables or leaking shards.
func TestCitusURL(t *testing.T) {
	ctx := context.Background()
	var schema string
	t.Run("schema", func(t *testing.T) {
		u, name := CitusURL(t)
		schema = name
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var current string
		if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&current); err != nil || current != name {
			t.Fatalf("current_schema() = %q, %v; want %q", current, err, name)
		}
		if _, err := conn.Exec(ctx, `CREATE TABLE t (bucket smallint NOT NULL, id bigint NOT NULL, PRIMARY KEY (bucket, id))`); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `SELECT create_distributed_table('t', 'bucket')`); err != nil {
			t.Fatal(err)
		}
		var nodes int
		if err := conn.QueryRow(ctx, `SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 't'::regclass`).Scan(&nodes); err != nil || nodes < 2 {
			t.Fatalf("the table's shards are on %d nodes (%v); want every worker", nodes, err)
		}
	})
	u, err := citusCoordinator()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM citus_shards WHERE table_name::text LIKE $1 || '.%'`, schema).Scan(&left); err != nil || left != 0 {
		t.Fatalf("after the test, %d shards of schema %s are left (%v)", left, schema, err)
	}
}
