package reliability_test

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/internal/pgtest"
)

// prepareCitus gives the test a schema of its own on the Citus cluster of
// $QUEUEGEN_CITUS_URL (failing, with how to provide one, without it),
// migrates the Citus spec there (queues work and event distributed by
// bucket) and adds the Citus audit (citusAudit). Every session of the
// test's, the workerprocs' too, has the schema's name as its
// application_name.
func prepareCitus(t *testing.T) *target {
	t.Helper()
	address, schema := pgtest.CitusURL(t)
	u, err := url.Parse(address)
	if err != nil {
		t.Fatal(err)
	}
	// The schema's name: PostgreSQL keeps 63 bytes of an application_name,
	// and no more than that of a schema's.
	application := schema
	q := u.Query()
	q.Set("application_name", application)
	u.RawQuery = q.Encode()
	address = u.String()
	ctx := context.Background()
	m, err := migrate.Open(address, migrations(citus), migrate.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	tg := &target{engine: citus, address: address, schema: schema, application: application}
	if tg.pool, err = pgxpool.New(ctx, address); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.pool.Close)
	conn, err := tg.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, stmt := range citusAudit(schema) {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("the Citus audit: %v\n%s", err, stmt)
		}
	}
	// The check of run_command_on_workers: each worker made the tables.
	var failed int
	var why string
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE NOT success), coalesce(string_agg(result, '; '), '')
FROM run_command_on_workers($1)`, citusAuditTables(schema)).Scan(&failed, &why); err != nil || failed != 0 {
		t.Fatalf("the Citus audit's tables on the worker nodes: %d failed, %s (%v)", failed, why, err)
	}
	return tg.on()
}

// citusAudit is audit on Citus, which refuses triggers on a distributed
// table unless citus.enable_unsafe_triggers is on; then it creates each
// trigger on every shard, where it fires on the worker node holding the
// shard, in the transaction of the statement that changed the row. The
// suite's triggers there write plain tables local to that node (not
// Citus tables: nothing distributed is written from a shard), created on
// every node: completed_here, each completion (the row's delete) with its
// attempt, and reclaimed_here, each claim of queue work that takes a
// running job from its holder (the holder's attempt, its lease's end and
// the claim's time, by the clock of the node holding the shard, which the
// claim's lease times are computed by too). A completion's log row
// commits with its delete or not at all, as on PostgreSQL, so the audit
// proves the same: collectAudit gathers every node's rows into the
// coordinator's completed_log and reclaimed, which the tallies read, with
// handled and lapsed, tables of the coordinator's that the workers write as on
// PostgreSQL. The triggers write no distributed table and do not notify,
// so the queue's statements run as they would without them (a COPY
// inserts and fires none).
func citusAudit(schema string) []string {
	s := pgx.Identifier{schema}.Sanitize()
	return []string{
		`CREATE TABLE handled (queue text NOT NULL, job_id bigint NOT NULL, attempt integer NOT NULL, instance text NOT NULL,
    run text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp(), PRIMARY KEY (queue, job_id, attempt, run))`,
		`CREATE TABLE lapsed (queue text NOT NULL, job_id bigint NOT NULL, attempt integer NOT NULL, instance text NOT NULL,
    why text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp(), PRIMARY KEY (queue, job_id, attempt, instance, why))`,
		`CREATE TABLE completed_log (queue text NOT NULL, job_id bigint NOT NULL, attempt integer NOT NULL)`,
		`CREATE TABLE reclaimed (queue text NOT NULL, job_id bigint NOT NULL, attempt integer NOT NULL, lease_until timestamptz, at timestamptz NOT NULL)`,
		// The coordinator's own, should it hold shards.
		citusAuditTables(schema),
		`CREATE FUNCTION ` + s + `.log_completion() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ` + s + `.completed_here VALUES (TG_ARGV[0], OLD.id, OLD.attempt);
    RETURN OLD;
END $$`,
		`CREATE FUNCTION ` + s + `.log_reclaim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ` + s + `.reclaimed_here VALUES (TG_ARGV[0], OLD.id, OLD.attempt, OLD.locked_until, clock_timestamp());
    RETURN NEW;
END $$`,
		// On every node before the triggers that call them are created
		// on the shards, which name them with their schema: Citus
		// creates a shard's trigger with the worker's search_path.
		`SELECT create_distributed_function('` + s + `.log_completion()')`,
		`SELECT create_distributed_function('` + s + `.log_reclaim()')`,
		`SET citus.enable_unsafe_triggers = on`,
		`CREATE TRIGGER work_completed AFTER DELETE ON work_queue FOR EACH ROW EXECUTE FUNCTION ` + s + `.log_completion('work_queue')`,
		`CREATE TRIGGER event_completed AFTER DELETE ON event_queue FOR EACH ROW EXECUTE FUNCTION ` + s + `.log_completion('event_queue')`,
		`CREATE TRIGGER work_reclaimed AFTER UPDATE ON work_queue FOR EACH ROW
    WHEN (OLD.state = 'running' AND NEW.state = 'running' AND NEW.attempt > OLD.attempt) EXECUTE FUNCTION ` + s + `.log_reclaim('work_queue')`,
		`RESET citus.enable_unsafe_triggers`,
	}
}

// citusAuditTables creates the node-local tables the audit's triggers
// write, in schema.
func citusAuditTables(schema string) string {
	s := pgx.Identifier{schema}.Sanitize()
	return `CREATE TABLE ` + s + `.completed_here (queue text NOT NULL, job_id bigint NOT NULL, attempt integer NOT NULL);
CREATE TABLE ` + s + `.reclaimed_here (queue text NOT NULL, job_id bigint NOT NULL, attempt integer NOT NULL, lease_until timestamptz, at timestamptz NOT NULL)`
}

// collectAudit, on Citus, makes the coordinator's completed_log and
// reclaimed what the triggers logged on every node of the cluster so far,
// failing the test when a node does not answer; elsewhere the triggers
// write them directly, and it does nothing.
func (tg *target) collectAudit(t *testing.T) {
	t.Helper()
	if tg.engine != citus {
		return
	}
	ctx := context.Background()
	s := pgx.Identifier{tg.schema}.Sanitize()
	for _, c := range []struct{ here, log, columns string }{
		{"completed_here", "completed_log", "queue text, job_id bigint, attempt integer"},
		{"reclaimed_here", "reclaimed", "queue text, job_id bigint, attempt integer, lease_until timestamptz, at timestamptz"},
	} {
		var docs []string
		var failed []string
		tg.rows(t, func(scan func(dest ...any) error) error {
			var node int
			var ok bool
			var result string
			if err := scan(&node, &ok, &result); err != nil {
				return err
			}
			if !ok {
				failed = append(failed, fmt.Sprintf("node %d: %s", node, result))
			}
			docs = append(docs, result)
			return nil
		}, `SELECT nodeid, success, result FROM run_command_on_all_nodes(?)`,
			`SELECT coalesce(json_agg(h), '[]') FROM `+s+`.`+c.here+` h`)
		if len(failed) > 0 {
			t.Fatalf("the audit's %s on the nodes of the cluster: %s", c.here, strings.Join(failed, "; "))
		}
		tx, err := tg.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "TRUNCATE "+c.log); err != nil {
			tx.Rollback(ctx)
			t.Fatal(err)
		}
		for _, doc := range docs {
			if _, err := tx.Exec(ctx, "INSERT INTO "+c.log+" SELECT * FROM json_to_recordset($1::json) AS x("+c.columns+")", doc); err != nil {
				tx.Rollback(ctx)
				t.Fatal(err)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
