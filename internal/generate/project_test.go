package generate_test

import (
	"os"
	"path/filepath"
	"testing"
)

// projectDir is an empty directory standing for an application's module:
// it holds a go.mod, as a project that generates Go code does, so the
// generated accessors' import of their queries' subpackage resolves
// (example.com/app/<package.dir>/<name>db).
func projectDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/app\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
