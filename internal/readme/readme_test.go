package readme

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/model"
	"github.com/queuegen/queuegen/internal/spec"
)

// blocks returns the fenced code blocks of the README in a language.
func blocks(t *testing.T, lang string) []string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?ms)^```" + lang + "\n(.*?)^```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		out = append(out, m[1])
	}
	return out
}

// TestSpecsParse: every spec in the README is valid as written.
func TestSpecsParse(t *testing.T) {
	n := 0
	for i, b := range blocks(t, "yaml") {
		if !strings.HasPrefix(b, "version: 1") {
			continue
		}
		n++
		s, err := spec.Parse(fmt.Sprintf("README.md yaml block %d", i+1), []byte(b))
		if err != nil {
			t.Errorf("the README's spec does not parse:\n%v", err)
			continue
		}
		if _, err := model.Build(s); err != nil {
			t.Errorf("the README's spec does not build:\n%v", err)
		}
	}
	if n == 0 {
		t.Fatal("no spec found in the README")
	}
}

// prelude declares what the snippets take as given.
const prelude = `package snippets

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/examples/mailer/jobs"
	"github.com/queuegen/queuegen/queue"
)

var (
	ctx        context.Context
	pool       *pgxpool.Pool
	podName    string
	nodeID     string
	emails     = jobs.NewEmailQueue(pool)
	statements = jobs.NewStatementQueue(pool)
)

func send(context.Context, jobs.EmailPayload) error                    { return nil }
func render(context.Context, pgx.Tx, jobs.StatementPayload) error       { return nil }
var _ = []any{time.Second, queue.Node, pgx.ErrNoRows}
`

// TestGoSnippetsCompile compiles every Go snippet of the README against
// the example's queues, in a throwaway module: a snippet that is a whole
// file as a package of its own, the others as function bodies. Unused
// variables and imports are allowed (a snippet shows, it does not finish).
func TestGoSnippetsCompile(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	write := func(p, data string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goSum, _ := os.ReadFile(filepath.Join(root, "go.sum"))
	write(filepath.Join(mod, "go.mod"), "module example.com/readme\n\ngo 1.26\n\nrequire github.com/queuegen/queuegen v0.0.0\n\nreplace github.com/queuegen/queuegen => "+root+"\n")
	write(filepath.Join(mod, "go.sum"), string(goSum))
	var bodies strings.Builder
	snippets := blocks(t, "go")
	if len(snippets) == 0 {
		t.Fatal("no Go snippets in the README")
	}
	for i, b := range snippets {
		if strings.Contains(b, "\npackage ") || strings.HasPrefix(b, "package ") {
			write(filepath.Join(mod, fmt.Sprintf("file%d", i+1), "file.go"), b)
			continue
		}
		fmt.Fprintf(&bodies, "\nfunc snippet%d() {\n%s}\n", i+1, b)
	}
	write(filepath.Join(mod, "snippets", "snippets.go"), prelude+bodies.String())
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir = mod
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	build := exec.Command("go", "vet", "./...")
	build.Dir = mod
	out, _ := build.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, ".go:") && !strings.Contains(line, "declared and not used") && !strings.Contains(line, "imported and not used") {
			t.Errorf("a README snippet does not compile: %s", line)
		}
	}
	if t.Failed() {
		t.Logf("snippets.go:\n%s%s", prelude, bodies.String())
	}
}
