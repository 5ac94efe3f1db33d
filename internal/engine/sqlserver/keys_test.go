package sqlserver

import (
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
)

// keysQueue is a lease-mode queue table with a fair_by column and a JSON
// column, as QueueTable makes it.
func keysQueue(backlog bool) (engine.QueueTable, *catalog.Table) {
	q := engine.QueueTable{
		Name:    "sync_queue",
		Lease:   true,
		FairBy:  "account",
		Backlog: backlog,
		Payload: []*catalog.Column{
			{Name: "account", Type: "BIGINT", NotNull: true},
			{Name: "meta", Type: "NVARCHAR(MAX)", JSON: true},
		},
	}
	return q, Engine{}.QueueTable(q)
}

// TestArchiveTableTakesOutputInto checks what OUTPUT … INTO needs of its
// target: no CHECK constraint (SQL Server refuses OUTPUT INTO a table with
// one) and no IDENTITY (the job's id is written as it is), and the
// clustering retention deletes by.
func TestArchiveTableTakesOutputInto(t *testing.T) {
	_, queue := keysQueue(false)
	a := Engine{}.ArchiveTable(queue, nil)
	if len(a.Checks) != 0 {
		t.Errorf("archive has checks %v: OUTPUT INTO refuses a table with a CHECK constraint", a.Checks)
	}
	if len(a.Columns) != len(queue.Columns) {
		t.Fatalf("archive has %d columns, the queue table %d", len(a.Columns), len(queue.Columns))
	}
	for i, c := range a.Columns {
		if c.Name != queue.Columns[i].Name {
			t.Errorf("archive column %d is %s, the queue table's %s: OUTPUT writes them in order", i, c.Name, queue.Columns[i].Name)
		}
		if strings.Contains(c.Type, "IDENTITY") {
			t.Errorf("archive column %s is %s: the job's id is written as it is", c.Name, c.Type)
		}
	}
	if pk := a.Indexes[0]; !pk.Primary || strings.Join(pk.Columns, ",") != "finished_at,id" {
		t.Errorf("archive primary key %v: want clustered on (finished_at, id)", pk)
	}
	if a.Column("finished_at").NotNull != true {
		t.Errorf("archive finished_at is nullable, but keys the clustered index")
	}
}

// TestBacklogTable checks the backlog: the queue table's columns in order
// (the step moves rows with SELECT and OUTPUT deleted.*), checks of its
// own names, the fair index the step reads (the queue table then has
// none), and the reseed of its identity above the queue table's.
func TestBacklogTable(t *testing.T) {
	q, queue := keysQueue(true)
	b := Engine{}.BacklogTable(q, queue)
	for i, c := range b.Columns {
		if c.Name != queue.Columns[i].Name || c.Type != queue.Columns[i].Type {
			t.Errorf("backlog column %d is %s %s, the queue table's %s %s", i, c.Name, c.Type, queue.Columns[i].Name, queue.Columns[i].Type)
		}
	}
	for _, k := range b.Checks {
		if !strings.HasPrefix(k.Name, "sync_queue_backlog_") {
			t.Errorf("backlog check %s: constraint names are per schema, so it needs one of its own", k.Name)
		}
	}
	if len(b.Checks) != 3 {
		t.Errorf("backlog checks %d, want state, failures and meta", len(b.Checks))
	}
	for _, i := range queue.Indexes {
		if strings.HasSuffix(i.Name, "_fair_idx") {
			t.Errorf("queue table with a backlog has %s: the step reads the backlog's", i.Name)
		}
	}
	ddl := Engine{}.DDL("jobs").CreateTable(b)
	for _, want := range []string{
		"DECLARE @ids_after BIGINT = IDENT_CURRENT(N'jobs.sync_queue') + 1;",
		"EXEC sp_executesql N'DBCC CHECKIDENT (N''jobs.sync_queue_backlog'', RESEED, @seed);', N'@seed BIGINT', @seed = @ids_after;",
		"-- +goose StatementBegin", "-- +goose StatementEnd",
	} {
		if !strings.Contains(ddl, want) {
			t.Errorf("backlog DDL lacks %q:\n%s", want, ddl)
		}
	}
	got := Engine{}.QueueTable(engine.QueueTable{Name: "x_queue", FairBy: "account", Payload: q.Payload})
	if f := got.Indexes[2]; f.Name != "x_queue_fair_idx" || strings.Join(f.Columns, ",") != "account,run_after,id" || f.Where != "state = 'available'" {
		t.Errorf("fair index %+v: want (account, run_after, id) WHERE state = 'available'", f)
	}
}

// TestRateLog checks the rate log: clustered on (claimed_at, id), so the
// window is a range and the rows past it come first, with the key column
// of a per-key rate.
func TestRateLog(t *testing.T) {
	_, queue := keysQueue(false)
	r := Engine{}.RateLog(queue, queue.Column("account"))
	if r.Name != "sync_queue_rate" {
		t.Errorf("rate log %s", r.Name)
	}
	if pk := r.Indexes[0]; !pk.Primary || strings.Join(pk.Columns, ",") != "claimed_at,id" {
		t.Errorf("rate log primary key %v: want clustered on (claimed_at, id)", pk)
	}
	if c := r.Column("account"); c == nil || c.Type != "BIGINT" || !c.NotNull {
		t.Errorf("rate log key column %+v", c)
	}
}
