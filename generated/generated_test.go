package generated_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	sqlc "github.com/sqlc-dev/sqlc/pkg/cli"
)

// TestGeneratedIsFresh runs sqlc in-process over the project's own
// sqlc.yaml, schema/ and queries/ in a scratch copy and compares what it
// writes with this package: run go generate ./generated when it fails.
func TestGeneratedIsFresh(t *testing.T) {
	tmp := t.TempDir()
	for _, p := range []string{"../sqlc.yaml"} {
		copyFile(t, p, filepath.Join(tmp, filepath.Base(p)))
	}
	for _, dir := range []string{"schema", "queries"} {
		files, _ := filepath.Glob(filepath.Join("..", dir, "*.sql"))
		for _, f := range files {
			copyFile(t, f, filepath.Join(tmp, dir, filepath.Base(f)))
		}
	}
	if code := sqlc.Run([]string{"generate", "-f", filepath.Join(tmp, "sqlc.yaml")}); code != 0 {
		t.Fatalf("sqlc generate exited %d", code)
	}
	fresh, _ := filepath.Glob(filepath.Join(tmp, "generated", "*.go"))
	if len(fresh) == 0 {
		t.Fatal("sqlc wrote nothing")
	}
	for _, f := range fresh {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Base(f))
		if err != nil {
			t.Errorf("%s is missing: run go generate ./generated", filepath.Base(f))
			continue
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s is stale (run go generate ./generated) (-fresh +committed):\n%s", filepath.Base(f), diff)
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
