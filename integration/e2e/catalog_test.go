package e2e_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
	"github.com/queuegen/queuegen/internal/spec"
	"github.com/queuegen/queuegen/queue/queueimpl"
)

// TestCatalog checks what the migrations built: the INHERITS children,
// each table's own primary key and claim index, and the registry.
func TestCatalog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)

	rows, err := db.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'base_queue'::regclass ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var children []string
	for rows.Next() {
		var name string
		rows.Scan(&name)
		children = append(children, name)
	}
	if diff := cmp.Diff([]string{"archived_queue", "backlogged_queue", "email_queue", "image_queue", "invoice_queue", "typed_queue"}, children); diff != "" {
		t.Errorf("children of base_queue (-want +got):\n%s", diff)
	}

	for _, table := range []string{"email_queue", "typed_queue", "report_queue", "webhook_queue", "invoice_queue", "image_queue"} {
		var pk string
		if err := db.QueryRow(ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'`, table).Scan(&pk); err != nil || pk != "PRIMARY KEY (id)" {
			t.Errorf("%s primary key = %q, %v", table, pk, err)
		}
		var def string
		if err := db.QueryRow(ctx, `SELECT indexdef FROM pg_indexes WHERE tablename = $1 AND indexname = $1 || '_claim_idx'`, table).Scan(&def); err != nil {
			t.Errorf("%s has no claim index: %v", table, err)
		} else if !strings.Contains(def, "WHERE (state = 'available'::text)") {
			t.Errorf("%s claim index is not partial on available jobs: %s", table, def)
		}
	}
	// The base table refuses rows of its own.
	if _, err := db.Exec(ctx, "INSERT INTO base_queue (max_attempts) VALUES (1)"); err == nil {
		t.Errorf("base_queue accepted a row")
	}
	// One registry row per queue of the spec.
	s, err := spec.Load("queuegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var registered int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM queuegen_queues").Scan(&registered); err != nil || registered != len(s.Queues) {
		t.Errorf("registry has %d queues, %v; want the spec's %d", registered, err, len(s.Queues))
	}
}

// TestClaimUsesClaimIndex runs EXPLAIN on the exact claim SQL sqlc
// compiled, on a table with enough rows that a sequential scan would be
// chosen if the index did not fit the query.
func TestClaimUsesClaimIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewEmailQueue(db)
	pushEmails(t, q, 20000)
	// Most rows finished, as in a queue that keeps them: the partial index
	// covers only the few available ones.
	if _, err := db.Exec(ctx, "UPDATE email_queue SET state = 'succeeded', finished_at = now() WHERE id % 100 <> 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "ANALYZE email_queue"); err != nil {
		t.Fatal(err)
	}
	sql := querySQL(t, "jobs/jobsdb/email.sql.go", "claimEmail")
	var plan []byte
	// Parameters in sqlc's order (that of ClaimEmailParams): now, node, lease, max.
	if err := db.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, nil, "n", 30*time.Second, 10).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(plan), `"Index Name": "email_queue_claim_idx"`) {
		t.Errorf("claim plan does not use email_queue_claim_idx:\n%s", plan)
	}
	if strings.Contains(string(plan), `"Seq Scan"`) {
		t.Errorf("claim plan has a sequential scan:\n%s", plan)
	}
	// The transaction-mode claim too.
	inv := querySQL(t, "jobs/jobsdb/invoice.sql.go", "claimInvoice")
	if err := db.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+inv, nil, 10).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(plan), `"Index Name": "invoice_queue_claim_idx"`) && !strings.Contains(string(plan), `"Seq Scan"`) {
		t.Errorf("unexpected invoice claim plan:\n%s", plan)
	}
}

// pushEmails pushes n emails in one PushMany.
func pushEmails(t *testing.T, q *jobs.EmailQueue, n int) {
	t.Helper()
	ps := make([]jobs.EmailPayload, n)
	for i := range ps {
		ps[i] = jobs.EmailPayload{Recipient: "r"}
	}
	if _, err := q.PushMany(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseNodeUsesLeaseIndex checks that a restarting node finds the
// jobs it held through the lease index, which holds only the jobs in
// flight, rather than reading the whole table: there is no index on
// locked_by, as every claim would pay to keep one.
func TestReleaseNodeUsesLeaseIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migrated(t)
	q := jobs.NewEmailQueue(db)
	pushEmails(t, q, 20000)
	if _, err := q.Claim(ctx, "a", 50); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Claim(ctx, "b", 50); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "ANALYZE email_queue"); err != nil {
		t.Fatal(err)
	}
	var plan []byte
	if err := db.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+querySQL(t, "jobs/jobsdb/email.sql.go", "releaseNodeEmail"), "a").Scan(&plan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(plan), `"Index Name": "email_queue_lease_idx"`) || strings.Contains(string(plan), `"Seq Scan"`) {
		t.Errorf("ReleaseNode's plan does not read email_queue_lease_idx alone:\n%s", plan)
	}
	n, err := q.ReleaseNode(ctx, "a")
	if err != nil || n != 50 {
		t.Fatalf("ReleaseNode(a) = %d, %v; want the 50 jobs node a held", n, err)
	}
}

// TestEveryColumnTypeRoundTrips pushes a payload of every supported type,
// with nulls and without, and reads it back unchanged.
func TestEveryColumnTypeRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := jobs.NewTypedQueue(migrated(t))
	var num pgtype.Numeric
	if err := num.Scan("-12345.678"); err != nil {
		t.Fatal(err)
	}
	var id pgtype.UUID
	if err := id.Scan("0b9a6c1e-3f5d-4c2b-9a8e-7d6c5b4a3f2e"); err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 11, 22, 10, 30, 0, 123456000, time.UTC)
	date := time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC)
	full := jobs.TypedPayload{
		CText: "héllo 'quoted'; DROP TABLE typed_queue; --", CVarchar: "ten chars!",
		CSmallint: -32768, CInteger: 2147483647, CBigint: -9223372036854775808, CBoolean: true,
		CNumeric: num, CReal: 1.5, CDouble: -2.25e300, CUUID: id,
		CTimestamptz: ts, CDate: date, CJsonb: []byte(`{"k": [1, "two", null]}`), CBytea: []byte{0, 1, 2, 255},
		CTextArray: []string{"a", "", "ü"}, CIntArray: []int32{1, -2, 3},
		NText: ptr("n"), NInteger: ptr(int32(-1)), NBoolean: ptr(false), NDouble: ptr(0.5),
		NTimestamptz: &ts, NDate: &date, NUUID: id, NBytea: []byte("x"), NTextArray: []string{"z"},
		DCount: ptr(int32(3)),
	}
	// Left unset: nil slices of NOT NULL columns go in empty, a nil jsonb as
	// the JSON document null, and d_count takes its default.
	empty := jobs.TypedPayload{CTimestamptz: ts, CDate: date, CNumeric: num, CUUID: id}
	for name, p := range map[string]jobs.TypedPayload{"full": full, "nulls and empties": empty} {
		res, err := q.Push(ctx, p)
		if err != nil {
			t.Fatalf("%s: Push: %v", name, err)
		}
		got, err := q.Get(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		// jsonb is normalised by PostgreSQL; compare it as JSON.
		var wantJSON, gotJSON any
		json.Unmarshal(p.CJsonb, &wantJSON)
		json.Unmarshal(got.Payload.CJsonb, &gotJSON)
		if diff := cmp.Diff(wantJSON, gotJSON); diff != "" {
			t.Errorf("%s: jsonb (-want +got):\n%s", name, diff)
		}
		got.Payload.CJsonb, p.CJsonb = nil, nil
		// NOT NULL slices go in empty when nil, and come back empty.
		p.CBytea, p.CTextArray, p.CIntArray = queueimpl.EmptyIfNil(p.CBytea), queueimpl.EmptyIfNil(p.CTextArray), queueimpl.EmptyIfNil(p.CIntArray)
		if p.DCount == nil {
			p.DCount = ptr(int32(7)) // the column's default
		}
		if diff := cmp.Diff(p, got.Payload, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }), cmp.Comparer(numericEqual)); diff != "" {
			t.Errorf("%s: payload round trip (-want +got):\n%s", name, diff)
		}
	}
}

func numericEqual(a, b pgtype.Numeric) bool {
	av, _ := a.Value()
	bv, _ := b.Value()
	return av == bv
}
