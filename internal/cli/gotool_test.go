package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoToolGenerate builds a throwaway application module that declares
// queuegen as a tool (a `tool` line in go.mod) and runs
// `//go:generate go tool queuegen generate`, then builds the application
// with the generated package: the workflow the README shows.
func TestGoToolGenerate(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	app := t.TempDir()
	goSum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod": "module example.com/app\n\ngo 1.26\n\ntool github.com/queuegen/queuegen/cmd/queuegen\n\n" +
			"require github.com/queuegen/queuegen v0.0.0\n\nreplace github.com/queuegen/queuegen => " + root + "\n",
		"go.sum": string(goSum),
		"queuegen.yaml": `version: 1
package: {name: jobs, dir: internal/jobs}
migrations: db/migrations
queries: db/queries
queues:
  - name: thumbnail
    payload:
      columns:
        image_url: text
`,
		"generate.go": "package main\n\n//go:generate go tool queuegen generate\n",
	}
	mainGo := map[string]string{
		"main.go": `package main

import (
	"context"
	"fmt"

	"example.com/app/internal/jobs"
)

func main() {
	q := jobs.NewThumbnailQueue(nil)
	_ = q.Push
	fmt.Println(context.Background() != nil)
}
`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(app, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = app
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd("mod", "tidy")
	out := goCmd("generate", "./...")
	if !strings.Contains(out, "internal/jobs/thumbnail_queue.go") {
		t.Errorf("go generate output lacks the accessor:\n%s", out)
	}
	// The application code that uses the generated package comes after.
	for name, data := range mainGo {
		if err := os.WriteFile(filepath.Join(app, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd("mod", "tidy")
	goCmd("build", "./...")
	if out := goCmd("tool", "queuegen", "check"); !strings.Contains(out, "up to date") {
		t.Errorf("go tool queuegen check:\n%s", out)
	}
}
