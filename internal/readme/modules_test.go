package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// withoutImporters are the product module's packages, not commands, that
// no non-test package of the module imports, with why each belongs in the
// product module all the same. Any other such package is a fixture (only
// tests use it): it goes to the integration module (integration/, see the
// README's "How the code is organised"). The list should not grow.
var withoutImporters = map[string]string{
	"internal/dbtest": "test helper: each engine's test database, for the tests of both modules",
	"internal/readme": "the README's tests (this package)",
	"schema":          "queuegen's own tables as SQL, which the emitted migrations must write exactly (internal/engine/postgres's DDL test)",
}

// TestProductModuleListsNoFixtures: go list ./... of the product module on
// its own (GOWORK=off, as a user's build sees it) lists no package of the
// integration module, none of the suites and fixtures moved there (e2e,
// reliability, sqlc's generated code, experiments), and no other package
// that only tests use, but for withoutImporters.
func TestProductModuleListsNoFixtures(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/queuegen/queuegen"
	list := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{.Name}}\t{{join .Imports \" \"}}", "./...")
	list.Dir = root
	list.Env = append(os.Environ(), "GOWORK=off")
	out, err := list.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("GOWORK=off go list ./...: %v\n%s", err, msg)
	}
	type pkg struct{ path, dir, name string }
	var pkgs []pkg
	imported := map[string]bool{}
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 4 {
			t.Fatalf("go list wrote %q", line)
		}
		pkgs = append(pkgs, pkg{f[0], f[1], f[2]})
		for _, imp := range strings.Fields(f[3]) {
			imported[imp] = true
		}
	}
	if len(pkgs) < 10 || !slices.ContainsFunc(pkgs, func(p pkg) bool { return p.path == mod+"/queue" }) {
		t.Fatalf("go list ./... listed %d packages, without %s/queue: not the product module?\n%s", len(pkgs), mod, out)
	}
	integration := filepath.Join(root, "integration") + string(filepath.Separator)
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.path, mod), "/")
		if strings.HasPrefix(p.path, mod+"/integration") || strings.HasPrefix(p.dir+string(filepath.Separator), integration) {
			t.Errorf("the product module lists %s, a package of the integration module", p.path)
		}
		for _, seg := range strings.Split(rel, "/") {
			if seg == "e2e" || seg == "reliability" || seg == "generated" || seg == "experiments" {
				t.Errorf("the product module lists %s, a fixture (its place is under integration/)", p.path)
			}
		}
		if p.name == "main" || imported[p.path] {
			continue
		}
		if _, ok := withoutImporters[rel]; !ok {
			t.Errorf("no package of the product module but tests imports %s: a fixture (move it to integration/) or, if the product needs it, add it to withoutImporters with why", p.path)
		}
	}
	for rel := range withoutImporters {
		if imported[mod+"/"+rel] {
			t.Errorf("%s is imported by a package of the product module now: take it off withoutImporters", rel)
		}
		if !slices.ContainsFunc(pkgs, func(p pkg) bool { return p.path == mod+"/"+rel }) {
			t.Errorf("%s is on withoutImporters but go list ./... does not list it: take it off", rel)
		}
	}
}

// TestModulesPinTheSameVersions: a module that both go.mod files require
// (sqlc, goose, pgx, the drivers, ...) is at the same version in each, so
// the integration suites test what the product module builds with.
func TestModulesPinTheSameVersions(t *testing.T) {
	requires := func(path string) map[string]string {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		req := map[string]string{}
		block := false
		for line := range strings.Lines(string(data)) {
			f := strings.Fields(line)
			switch {
			case len(f) >= 2 && f[0] == "require" && f[1] == "(":
				block = true
			case block && len(f) >= 1 && f[0] == ")":
				block = false
			case block && len(f) >= 2:
				req[f[0]] = f[1]
			case len(f) >= 3 && f[0] == "require":
				req[f[1]] = f[2]
			}
		}
		return req
	}
	product, integration := requires("../../go.mod"), requires("../../integration/go.mod")
	for _, m := range []string{"github.com/sqlc-dev/sqlc", "github.com/pressly/goose/v3", "github.com/jackc/pgx/v5"} {
		if product[m] == "" || integration[m] == "" {
			t.Errorf("%s is not required by both go.mod files (product %q, integration %q)", m, product[m], integration[m])
		}
	}
	for m, v := range integration {
		if pv, ok := product[m]; ok && pv != v {
			t.Errorf("%s: %s in go.mod, %s in integration/go.mod", m, pv, v)
		}
	}
}
