package evolve

import (
	"testing"

	"github.com/queuegen/queuegen/internal/catalog"
)

func TestStateRoundTrip(t *testing.T) {
	s := &State{Schema: "public", Queues: []*catalog.Queue{{Name: "a", Mode: "lease", Table: &catalog.Table{Name: "a_queue",
		Columns: []*catalog.Column{{Name: "x", Type: "text", NotNull: true, Default: "'it''s'"}},
		Indexes: []*catalog.Index{{Name: "a_queue_pkey", Primary: true, Columns: []string{"id"}}},
		Options: []catalog.Option{{Name: "fillfactor", Value: "100"}}}}},
		Migrations: []*Migration{{File: "00001_x.sql", SHA256: Hash([]byte("x"))}}}
	data, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseState(data)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := back.Marshal()
	if string(again) != string(data) {
		t.Errorf("state does not round-trip:\n%s\n---\n%s", data, again)
	}
	if _, err := ParseState([]byte("schema: public\nunknown: 1\n")); err == nil {
		t.Error("an unknown key in the state file was accepted")
	}
}
