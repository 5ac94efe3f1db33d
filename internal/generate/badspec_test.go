package generate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/queuegen/queuegen/internal/generate"
)

// TestBadSpecs generates from each testdata/bad/<name>.yaml and compares
// the error with testdata/bad/<name>.err (-update rewrites those). Every
// message must name file:line:col, and nothing may be written.
func TestBadSpecs(t *testing.T) {
	specs, err := filepath.Glob("../../testdata/bad/*.yaml")
	if err != nil || len(specs) == 0 {
		t.Fatalf("no bad specs: %v", err)
	}
	for _, src := range specs {
		name := strings.TrimSuffix(filepath.Base(src), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			dir := projectDir(t)
			specPath := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(specPath, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = generate.Generate(specPath, generate.Options{})
			if err == nil {
				t.Fatal("no error")
			}
			got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "") + "\n"
			for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
				if !strings.HasPrefix(line, name+".yaml:") {
					t.Errorf("message line does not start with file:line:col: %q", line)
				}
			}
			golden := strings.TrimSuffix(src, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("error message (-want +got):\n%s", diff)
				}
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 2 { // the spec and go.mod
				t.Errorf("a bad spec wrote files: %d entries in its directory", len(entries))
			}
		})
	}
}
