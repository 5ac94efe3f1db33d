package evolve

import "testing"

func TestWidensInPlace(t *testing.T) {
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		{"varchar(10)", "varchar(20)", true},
		{"varchar(10)", "varchar(10)", true},
		{"varchar(20)", "varchar(10)", false},
		{"varchar(10)", "text", true},
		{"text", "varchar(10)", false},
		{"varchar(10)[]", "text[]", true},
		{"varchar(10)[]", "text", false},
		{"numeric(10, 2)", "numeric(12, 2)", true},
		{"numeric(10, 2)", "numeric(12, 3)", false},
		{"numeric(10, 2)", "numeric", true},
		{"numeric", "numeric(10, 2)", false},
		{"integer", "bigint", false},
		{"smallint", "integer", false},
		{"text", "jsonb", false},
	} {
		if got := widensInPlace(c.from, c.to); got != c.want {
			t.Errorf("widensInPlace(%s, %s) = %t, want %t", c.from, c.to, got, c.want)
		}
	}
}

func TestStateRoundTrip(t *testing.T) {
	s := &State{Schema: "public", Queues: []*Queue{{Name: "a", Mode: "lease", Table: &Table{Name: "a_queue",
		Columns: []*Column{{Name: "x", Type: "text", NotNull: true, Default: "'it''s'"}},
		Indexes: []*Index{{Name: "a_queue_pkey", Primary: true, Columns: []string{"id"}}}}}},
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
