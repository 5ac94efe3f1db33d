package generated_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	sqlc "github.com/sqlc-dev/sqlc/pkg/cli"
)

// TestGeneratedIsFresh runs sqlc in-process over sqlc.yaml, queries/ and
// the product module's schema/ in a scratch copy laid out as they are here
// (integration/sqlc and schema, two levels apart) and compares what it
// writes with this package: run go generate ./sqlc/generated when it fails.
func TestGeneratedIsFresh(t *testing.T) {
	tmp := t.TempDir()
	conf := filepath.Join(tmp, "integration", "sqlc")
	copyFile(t, "../sqlc.yaml", filepath.Join(conf, "sqlc.yaml"))
	for _, dir := range []struct{ from, to string }{{"../queries", filepath.Join(conf, "queries")}, {"../../../schema", filepath.Join(tmp, "schema")}} {
		files, _ := filepath.Glob(filepath.Join(dir.from, "*.sql"))
		if len(files) == 0 {
			t.Fatalf("no SQL files in %s", dir.from)
		}
		for _, f := range files {
			copyFile(t, f, filepath.Join(dir.to, filepath.Base(f)))
		}
	}
	if code := sqlc.Run([]string{"generate", "-f", filepath.Join(conf, "sqlc.yaml")}); code != 0 {
		t.Fatalf("sqlc generate exited %d", code)
	}
	fresh, _ := filepath.Glob(filepath.Join(conf, "generated", "*.go"))
	if len(fresh) == 0 {
		t.Fatal("sqlc wrote nothing")
	}
	for _, f := range fresh {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Base(f))
		if err != nil {
			t.Errorf("%s is missing: run go generate ./sqlc/generated", filepath.Base(f))
			continue
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s is stale (run go generate ./sqlc/generated) (-fresh +committed):\n%s", filepath.Base(f), diff)
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
