package engine_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/engine"
	_ "github.com/queuegen/queuegen/internal/engine/all"
)

// stillBranching are the files outside the engines that still ask which
// engine a database is by its name, with why. The seam test fails on any
// other file that does, and on a file here that no longer does (take it
// off the list). The list should only shrink: see the README's "How the
// code is organised".
var stillBranching = map[string]string{
	"internal/dbtest/dbtest.go":                  "test helper: each engine's test server",
	"internal/dbtest/sqlserver.go":               "test helper: SQL Server's test server",
	"internal/bench/bench.go":                    "benchmark harness: each engine's generated bench tree",
	"integration/reliability/workerproc/main.go": "reliability harness: each engine's generated worker tree",
	"internal/pgtest/pgtest.go":                  "test helper: PostgreSQL URL schemes",
}

// TestOneSeam: outside the engine packages, no Go file of the module asks
// which engine it deals with by comparing, switching on or keying a map by
// an engine's name, written as a string literal ("mysql") or as one of the
// constants naming engines (dburl.MySQL, mysql.Name). Engine facts are
// reached through the engine's package instead (engine.Engine, its
// capability interfaces such as Connector). The runtime queue packages,
// generated trees, testdata and _test.go files are not looked at.
func TestOneSeam(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, n := range engine.Names() {
		names[n] = true
	}
	hits := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel != "." && strings.HasPrefix(d.Name(), "."), d.Name() == "testdata", d.Name() == "vendor",
				rel == "internal/engine", rel == "queue", rel == "examples":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		for _, h := range engineBranches(fset, f, names) {
			hits[rel] = append(hits[rel], rel+":"+h)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for f := range hits {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		if _, ok := stillBranching[f]; !ok {
			t.Errorf("%s asks which engine it deals with by name; reach the engine's package instead (a method of engine.Engine or a capability interface):\n\t%s", f, strings.Join(hits[f], "\n\t"))
		}
	}
	for f := range stillBranching {
		if len(hits[f]) == 0 {
			t.Errorf("%s no longer branches on an engine's name: take it off stillBranching", f)
		}
	}
}

// engineBranches are the places in f where an engine name (a string
// literal of names, or a constant naming an engine) is compared, is a
// switch case, or is a map key, as line:column: what.
func engineBranches(fset *token.FileSet, f *ast.File, names map[string]bool) []string {
	isName := func(e ast.Expr) bool {
		switch e := ast.Unparen(e).(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return false
			}
			s, err := strconv.Unquote(e.Value)
			return err == nil && names[s]
		case *ast.SelectorExpr:
			x, ok := e.X.(*ast.Ident)
			if !ok {
				return false
			}
			switch {
			case x.Name == "dburl":
				return e.Sel.Name == "PostgreSQL" || e.Sel.Name == "MySQL" || e.Sel.Name == "SQLServer"
			case e.Sel.Name == "Name":
				for _, imp := range f.Imports {
					p, _ := strconv.Unquote(imp.Path.Value)
					local := filepath.Base(p)
					if imp.Name != nil {
						local = imp.Name.Name
					}
					if local == x.Name && strings.Contains(p, "/internal/engine/") {
						return true
					}
				}
			}
		}
		return false
	}
	var out []string
	note := func(e ast.Expr, what string) {
		p := fset.Position(e.Pos())
		out = append(out, strconv.Itoa(p.Line)+":"+strconv.Itoa(p.Column)+": "+what)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				for _, e := range []ast.Expr{n.X, n.Y} {
					if isName(e) {
						note(e, "compared")
					}
				}
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				if isName(e) {
					note(e, "switch case")
				}
			}
		case *ast.KeyValueExpr:
			if isName(n.Key) {
				note(n.Key, "map key")
			}
		}
		return true
	})
	return out
}

// TestEngineBranchesFinds: the seam test sees each form of branching.
func TestEngineBranchesFinds(t *testing.T) {
	src := `package p

import (
	"github.com/queuegen/queuegen/internal/dburl"
	my "github.com/queuegen/queuegen/internal/engine/mysql"
)

func f(e string) int {
	if e == "postgresql" {
		return 1
	}
	switch e {
	case dburl.MySQL:
		return 2
	}
	_ = map[string]int{"sqlserver": 3}
	_ = e != my.Name
	_ = e == "postgres" || e == "public"
	return 0
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(engineBranches(fset, f, map[string]bool{"postgresql": true, "mysql": true, "sqlserver": true}), "\n")
	want := "9:10: compared\n13:7: switch case\n16:21: map key\n17:11: compared"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestEveryEngineServesRunTime: every registered engine is reached at run
// time through its package (dburl, migrate), so each implements the run
// time's interfaces, and no two claim a URL scheme.
func TestEveryEngineServesRunTime(t *testing.T) {
	schemes := map[string]string{}
	for _, n := range engine.Names() {
		e, err := engine.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := e.(engine.Connector)
		if !ok {
			t.Errorf("engine %s is no engine.Connector: queuegen's commands cannot connect to its databases", n)
			continue
		}
		if _, ok := e.(engine.MigrationHost); !ok {
			t.Errorf("engine %s is no engine.MigrationHost: queuegen migrate cannot serve its databases", n)
		}
		for _, s := range c.Schemes() {
			if other, dup := schemes[s]; dup {
				t.Errorf("engines %s and %s both claim URL scheme %s", other, n, s)
			}
			schemes[s] = n
		}
	}
}
