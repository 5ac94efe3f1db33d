package queue_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The database drivers, by module path: a package links a driver when it
// depends on any package of the driver's module.
const (
	pgxDriver   = "github.com/jackc/pgx/v5"
	mysqlDriver = "github.com/go-sql-driver/mysql"
	mssqlDriver = "github.com/microsoft/go-mssqldb"
)

var drivers = []string{pgxDriver, mysqlDriver, mssqlDriver}

// TestEachApplicationLinksItsOwnDriver lists with go list -deps what each
// package of the runtime and each example application links: the
// engine-neutral runtime (queue, queueimpl) no driver at all, each
// driver's runtime package its own only, and each example (whose generated
// code imports its engine's runtime) its own engine's driver and no
// other's. It catches a driver import added to the shared runtime, or a
// template that qualifies a driver-specific helper with another engine's
// (or the shared) package.
func TestEachApplicationLinksItsOwnDriver(t *testing.T) {
	const mod = "github.com/queuegen/queuegen/"
	want := map[string][]string{ // package → the drivers it must link, and no other
		mod + "queue":                          nil,
		mod + "queue/queueimpl":                nil,
		mod + "queue/queuepgx":                 {pgxDriver},
		mod + "queue/queueimpl/pgximpl":        {pgxDriver},
		mod + "queue/queueimpl/mysqlimpl":      {mysqlDriver},
		mod + "queue/queueimpl/mssqlimpl":      {mssqlDriver},
		mod + "examples/mailer":                {pgxDriver},
		mod + "examples/mailer-mysql":          {mysqlDriver},
		mod + "examples/mailer-sqlserver":      {mssqlDriver},
		mod + "examples/mailer-citus":          {pgxDriver},
		mod + "examples/mailer-citus/jobs":     {pgxDriver},
		mod + "examples/mailer/jobs":           {pgxDriver},
		mod + "examples/mailer-mysql/jobs":     {mysqlDriver},
		mod + "examples/mailer-sqlserver/jobs": {mssqlDriver},
	}
	pkgs := make([]string, 0, len(want))
	for p := range want {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	args := append([]string{"list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}, pkgs...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, msg)
	}
	seen := map[string]bool{}
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		seen[pkg] = true
		for _, d := range drivers {
			linked := slices.IndexFunc(deps, func(dep string) bool { return dep == d || strings.HasPrefix(dep, d+"/") })
			switch wanted := slices.Contains(want[pkg], d); {
			case wanted && linked < 0:
				t.Errorf("%s does not link %s, its engine's driver", pkg, d)
			case !wanted && linked >= 0:
				t.Errorf("%s links %s (package %s), a driver it must not link", pkg, d, deps[linked])
			}
		}
	}
	for _, p := range pkgs {
		if !seen[p] {
			t.Errorf("go list did not list %s", p)
		}
	}
}
