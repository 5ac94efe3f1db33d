package reliability_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/dbtest"
)

// TestSuiteCatchesMutations proves the suite can fail: it builds this
// package's tests with the queuegen_mutation tag, whose runtime carries
// deliberate bugs (queue/mutation_on.go), runs scenarios with each bug
// switched on, on each engine apart, and requires each to fail with the
// sign of that bug, within three runs where the scenario provokes the bug
// by chance.
func TestSuiteCatchesMutations(t *testing.T) {
	if os.Getenv("QUEUEGEN_MUTATION") != "" {
		t.Fatal("TestSuiteCatchesMutations runs the suite under mutations; it must not run under one itself")
	}
	bin := filepath.Join(t.TempDir(), "reliability.test")
	if out, err := exec.Command("go", "test", "-c", "-tags", "queuegen_mutation", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the suite with mutations: %v\n%s", err, out)
	}
	for _, m := range []struct {
		name, scenarios, sign string
	}{
		// completes every 7th job without calling its handler
		{"skip-handler", "TestHandlerFailures", "completed without a successful handler run"},
		// drops a batch of results the database refused
		{"drop-refused", "TestConnectionsTerminated", "handled successfully more than once"},
		// completes a job whose handler failed
		{"error-completes", "TestHandlerFailures", "want 15 dead"},
		// runs every 11th job's handler twice
		{"double-run", "TestHandlerFailures", "handled successfully more than once"},
	} {
		for _, engine := range dbtest.ThisRun() {
			t.Run(m.name+"/"+engine, func(t *testing.T) {
				t.Parallel()
				// A scenario that provokes the bug by chance (terminating
				// connections hits a completion only while it is on the
				// wire) gets three runs to show it.
				var out []byte
				var err error
				for run := 1; run <= 3; run++ {
					cmd := exec.Command(bin, "-test.run", "^("+m.scenarios+")$/^("+engine+")$", "-test.count=1")
					cmd.Env = append(os.Environ(), "QUEUEGEN_MUTATION="+m.name, "QUEUEGEN_RELIABILITY_REPORT=")
					if out, err = cmd.CombinedOutput(); err != nil {
						break
					}
					t.Logf("run %d of the suite passed on %s with the %s bug in the runtime", run, engine, m.name)
				}
				if err == nil {
					t.Fatalf("the suite passed three times on %s with the %s bug in the runtime:\n%s", engine, m.name, out)
				}
				if !strings.Contains(string(out), m.sign) {
					t.Errorf("the suite failed on %s with the %s bug, but not with its sign %q:\n%s", engine, m.name, m.sign, out)
				}
			})
		}
	}
}
