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
	goCmd := goIn(t, app)
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

// TestGoGenerateAfterADroppedQueue: `go generate ./...` from the module's
// root, whose //go:generate line is in the root package, after a queue is
// dropped from the spec. go generate lists every package first, then
// reads each listed file for //go:generate lines; the generated package
// (internal/jobs) comes after the root, so the dropped queue's Go file,
// were queuegen to remove it, would fail the run ("generate: open
// …/webhook.sql.go: no such file or directory"). queuegen empties it
// instead; the application builds; check calls the tree fresh; the next
// go generate removes the file. On each engine's spec (no server needed).
func TestGoGenerateAfterADroppedQueue(t *testing.T) {
	for _, engine := range []string{"postgresql", "mysql"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			root, err := filepath.Abs("../..")
			if err != nil {
				t.Fatal(err)
			}
			app := t.TempDir()
			goSum, err := os.ReadFile(filepath.Join(root, "go.sum"))
			if err != nil {
				t.Fatal(err)
			}
			spec := "version: 1\nengine: " + engine + `
package: {name: jobs, dir: internal/jobs}
migrations: db/migrations
queries: db/queries
queues:
  - name: thumbnail
    payload:
      columns:
        image_url: text
`
			webhook := `  - name: webhook
    payload:
      columns:
        url: text
`
			write := func(name, data string) {
				t.Helper()
				if err := os.WriteFile(filepath.Join(app, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("go.mod", "module example.com/app\n\ngo 1.26\n\ntool github.com/queuegen/queuegen/cmd/queuegen\n\n"+
				"require github.com/queuegen/queuegen v0.0.0\n\nreplace github.com/queuegen/queuegen => "+root+"\n")
			write("go.sum", string(goSum))
			write("queuegen.yaml", spec+webhook)
			write("generate.go", "package main\n\n//go:generate go tool queuegen generate --allow-drop\n")
			goCmd := goIn(t, app)
			goCmd("mod", "tidy")
			goCmd("generate", "./...")
			stale := filepath.Join(app, "internal", "jobs", "jobsdb", "webhook.sql.go")
			if _, err := os.Stat(stale); err != nil {
				t.Fatalf("the webhook queue's Go file: %v", err)
			}
			write("main.go", "package main\n\nimport \"example.com/app/internal/jobs\"\n\nfunc main() { _ = jobs.NewThumbnailQueue }\n")
			goCmd("mod", "tidy")
			goCmd("build", "./...")

			write("queuegen.yaml", spec) // the webhook queue is dropped
			out := goCmd("generate", "./...")
			rel := filepath.Join("internal", "jobs", "jobsdb", "webhook.sql.go")
			if !strings.Contains(out, "emptied "+rel) {
				t.Errorf("go generate after the drop:\n%s", out)
			}
			data, err := os.ReadFile(stale)
			if err != nil || !strings.Contains(string(data), "//go:build ignore") || strings.Contains(string(data), "func ") {
				t.Errorf("the dropped queue's Go file after go generate = %v:\n%s", err, data)
			}
			goCmd("build", "./...")
			goCmd("vet", "./...")
			if out := goCmd("tool", "queuegen", "check"); !strings.Contains(out, "up to date") {
				t.Errorf("check after the drop:\n%s", out)
			}
			out = goCmd("generate", "./...")
			if _, err := os.Stat(stale); !os.IsNotExist(err) || !strings.Contains(out, "removed "+rel) {
				t.Errorf("the second go generate left %s (%v):\n%s", stale, err, out)
			}
			goCmd("build", "./...")
		})
	}
}

// goIn returns a function that runs the go command in the application
// module dir (resolving its modules as it goes) and returns its output,
// failing the test on an error.
func goIn(t *testing.T, dir string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}
