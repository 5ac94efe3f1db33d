package model_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/model"
	"github.com/queuegen/queuegen/internal/spec"
)

func build(t *testing.T, yaml string) error {
	t.Helper()
	s, err := spec.Parse("q.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("the spec does not parse: %v", err)
	}
	_, err = model.Build(s)
	return err
}

// TestColumnLimit: a table over the engine's column limit is refused at
// the spec, not by the migration.
func TestColumnLimit(t *testing.T) {
	var cols strings.Builder
	for i := range 1700 {
		fmt.Fprintf(&cols, "        c%d: integer\n", i)
	}
	err := build(t, "version: 1\npackage: {name: jobs, dir: jobs}\nmigrations: m\nqueries: q\nqueues:\n  - name: wide\n    payload:\n      columns:\n"+cols.String())
	if err == nil || !strings.Contains(err.Error(), "q.yaml:6:5: queues[wide].name: queue wide (table wide_queue) would have 1714 columns, and postgresql allows at most 1600") {
		t.Errorf("1700 payload columns: %v", err)
	}
}

// TestDerivedNamesUnique: two tables whose derived names would collide
// are refused, naming both.
func TestDerivedNamesUnique(t *testing.T) {
	err := build(t, `version: 1
package: {name: jobs, dir: jobs}
migrations: m
queries: q
queues:
  - name: a
    table: mail
    payload: {columns: {n: integer}}
  - name: b
    table: mail_claim
    payload: {columns: {n: integer}}
`)
	if err != nil {
		t.Fatalf("distinct tables were refused: %v", err)
	}
	err = build(t, `version: 1
package: {name: jobs, dir: jobs}
migrations: m
queries: q
queues:
  - name: a
    table: mail
    payload: {columns: {n: integer}}
  - name: b
    table: mail_claim_idx
    payload: {columns: {n: integer}}
`)
	if err == nil || !strings.Contains(err.Error(), `queue b (table mail_claim_idx) would create "mail_claim_idx", which queue a (table mail) creates too`) {
		t.Errorf("colliding derived names: %v", err)
	}
}

// TestArchiveGoNames: a queue's archive row type is reserved only when it
// archives: queues email and email_archive stand side by side until email
// archives, and then email_archive's row type would be email's archive's.
func TestArchiveGoNames(t *testing.T) {
	spec := func(onSuccess string) string {
		return `version: 1
package: {name: jobs, dir: jobs}
migrations: m
queries: q
queues:
  - name: email
    ` + onSuccess + `
    payload: {columns: {n: integer}}
  - name: email_archive
    payload: {columns: {n: integer}}
`
	}
	if err := build(t, spec("on_success: keep")); err != nil {
		t.Errorf("email and email_archive without an archive: %v", err)
	}
	err := build(t, spec("on_success: archive\n    retention: {succeeded: 7d}"))
	if err == nil || !strings.Contains(err.Error(), "the generated Go name EmailArchiveRow is also generated for queue \"email\"") {
		t.Errorf("email archiving beside email_archive: %v", err)
	}
}

// TestDistributed: a queue with distribute is Distributed with its bucket
// count, ids of IDBuckets and its coordinator sequence; its table is
// distributed by bucket (primary key and every index led by it, no notify
// trigger); the second distributed table is colocated with the first;
// queuegen's own tables become reference tables; a queue without it is
// untouched.
func TestDistributed(t *testing.T) {
	s, err := spec.Parse("q.yaml", []byte(`version: 1
package: {name: jobs, dir: jobs, import_path: example.com/jobs}
migrations: m
queries: q
queues:
  - name: a
    inherits: false
    unique: true
    notify: true
    distribute: {buckets: 64}
    payload: {columns: {n: integer}}
  - name: plain
    payload: {columns: {n: integer}}
  - name: b
    inherits: false
    distribute: {buckets: 8}
    payload: {columns: {n: integer}}
`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	a, plain, b := m.Queues[0], m.Queues[1], m.Queues[2]
	if !a.Distributed() || a.Buckets != 64 || a.IDBuckets != spec.MaxBuckets || a.Sequence != "a_queue_id_seq" {
		t.Errorf("a: distributed %v, buckets %d, id buckets %d, sequence %q", a.Distributed(), a.Buckets, a.IDBuckets, a.Sequence)
	}
	if plain.Distributed() || plain.Table.Distribution != nil {
		t.Error("plain is distributed")
	}
	if d := a.Table.Distribution; d == nil || d.Column != "bucket" || d.ColocateWith != "" {
		t.Errorf("a's distribution: %+v", d)
	}
	if d := b.Table.Distribution; d == nil || d.ColocateWith != "a_queue" || d.Buckets != 8 {
		t.Errorf("b's distribution: %+v", d)
	}
	for _, i := range a.Table.Indexes {
		if i.Columns[0] != "bucket" {
			t.Errorf("a's index %s is not led by bucket: %v", i.Name, i.Columns)
		}
	}
	if a.Table.NotifyTrigger != "" || a.NotifyChannel != "queuegen_a_queue" {
		t.Errorf("a: trigger %q (want none), channel %q", a.Table.NotifyTrigger, a.NotifyChannel)
	}
	if !m.Catalog.Reference || len(m.Catalog.Functions) != 0 {
		t.Errorf("reference tables %v, functions %v (want none: no queue on one node notifies)", m.Catalog.Reference, m.Catalog.Functions)
	}
}

// TestFairGoNames: a fair queue's claim reserves the names of its MySQL
// statements: queues key_mail (transaction mode: its claim is sqlc's
// ClaimKeyMail) and mail stand side by side until mail takes fair_by, and
// then mail's seek of one value's share would be ClaimKeyMail too.
func TestFairGoNames(t *testing.T) {
	spec := func(fair string) string {
		return `version: 1
package: {name: jobs, dir: jobs}
migrations: m
queries: q
queues:
  - name: mail
    ` + fair + `
    payload: {columns: {tenant: varchar(64)}}
  - name: key_mail
    mode: transaction
    payload: {columns: {n: integer}}
`
	}
	if err := build(t, spec("")); err != nil {
		t.Errorf("mail and key_mail without fair_by: %v", err)
	}
	err := build(t, spec("fair_by: tenant"))
	if err == nil || !strings.Contains(err.Error(), "the generated Go name ClaimKeyMail") {
		t.Errorf("mail with fair_by beside key_mail: %v", err)
	}
}
