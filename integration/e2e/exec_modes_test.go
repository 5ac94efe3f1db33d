package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/queuegen/queuegen/integration/e2e/jobs"
)

// TestExecModes runs the generated statements in every pgx query exec
// mode. Transaction-mode poolers (PgBouncer before 1.21) need one that
// prepares no named statement: cache_describe, exec or simple_protocol
// (describe_exec binds to the pooler's other clients' statements). Every
// mode must push (typed columns, JSON payloads, bulk), claim, complete and
// fail alike.
func TestExecModes(t *testing.T) {
	t.Parallel()
	base := migratedURL(t)
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			u, _ := url.Parse(base)
			q := u.Query()
			q.Set("default_query_exec_mode", mode)
			u.RawQuery = q.Encode()
			db := poolFor(t, u.String())

			typed := jobs.NewTypedQueue(db)
			p := jobs.TypedPayload{CText: "x", CJsonb: json.RawMessage(`{"a": [1, "b"]}`), CTimestamptz: time.Now(), CDate: time.Now(),
				CTextArray: []string{"a"}, CIntArray: []int32{1}, CBytea: []byte{0, 1}}
			p.CNumeric.Scan("1.5")
			p.CUUID.Scan("0b9a6c1e-3f5d-4c2b-9a8e-7d6c5b4a3f2e")
			if _, err := typed.Push(ctx, p); err != nil {
				t.Errorf("typed Push: %v", err)
			}
			reports := jobs.NewReportQueue(db)
			if _, err := reports.Push(ctx, jobs.ReportPayload{ReportID: 1, RequestedAt: time.Now()}); err != nil {
				t.Errorf("JSON Push: %v", err)
			}
			emails := jobs.NewEmailQueue(db)
			if _, err := emails.PushMany(ctx, []jobs.EmailPayload{{Recipient: "a"}, {Recipient: "b"}}); err != nil {
				t.Errorf("PushMany: %v", err)
			}
			got, err := emails.Claim(ctx, "n", 2)
			if err != nil || len(got) != 2 {
				t.Fatalf("Claim = %d, %v", len(got), err)
			}
			if n, err := emails.CompleteMany(ctx, got[:1]); err != nil || n != 1 {
				t.Errorf("CompleteMany = %d, %v", n, err)
			}
			if _, err := emails.FailMany(ctx, got[1:], []error{errors.New("x")}); err != nil {
				t.Errorf("FailMany: %v", err)
			}
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			claimed, err := reports.Claim(ctx, tx, 1)
			if err != nil || len(claimed) != 1 || claimed[0].Payload.ReportID != 1 {
				t.Fatalf("transaction-mode Claim = %v, %v", claimed, err)
			}
			if err := reports.Complete(ctx, tx, claimed[0]); err != nil {
				t.Errorf("Complete: %v", err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := emails.Depth(ctx); err != nil {
				t.Errorf("Depth: %v", err)
			}
			db.Exec(ctx, "DELETE FROM email_queue; DELETE FROM typed_queue")
		})
	}
}
