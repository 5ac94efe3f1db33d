package spec

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var positioned = regexp.MustCompile(`^fuzz\.yaml:\d+:\d+: `)

// FuzzParse: whatever the input, Parse never panics, and every rejection
// is a list of errors that each name fuzz.yaml:line:col.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("../../testdata/*/queuegen.yaml")
	bad, _ := filepath.Glob("../../testdata/bad/*.yaml")
	evo, _ := filepath.Glob("../../testdata/evolution/*.yaml")
	for _, p := range append(append(seeds, bad...), evo...) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("queues: [{name: a, payload: {columns: {b: text}}}]"))
	f.Add([]byte("version: 1\nqueues:\n  - &a {name: x}\n  - *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err == nil {
			if s == nil || len(s.Queues) == 0 {
				t.Fatalf("accepted a spec with no queues: %q", data)
			}
			for _, q := range s.Queues {
				if RulesFor(s.Engine).CheckName(q.Name) != "" || RulesFor(s.Engine).CheckName(q.Table) != "" {
					t.Fatalf("accepted a name that would reach SQL unchecked: %q / %q", q.Name, q.Table)
				}
			}
			return
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !positioned.MatchString(line) {
				t.Fatalf("rejection without a position: %q (input %q)", line, data)
			}
		}
	})
}
