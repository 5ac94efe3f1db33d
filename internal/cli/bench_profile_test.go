package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/pgtest"
)

// TestBenchWritesProfiles: --cpuprofile and --memprofile each leave a
// pprof file (gzip-compressed protocol buffers) after a short drain, and a
// profile path that cannot be written is an error before anything runs.
func TestBenchWritesProfiles(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	code, out, errs := run(t, "bench", "--db", url, "--workload", "drain", "--jobs", "500", "--cpuprofile", cpu, "--memprofile", mem)
	if code != 0 || !strings.Contains(out, "bench drain: 500 jobs") {
		t.Fatalf("bench = %d:\n%s%s", code, out, errs)
	}
	for _, path := range []string{cpu, mem} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s is not a gzip-compressed profile (%d bytes)", filepath.Base(path), len(b))
		}
	}

	for _, flag := range []string{"--cpuprofile", "--memprofile"} {
		missing := filepath.Join(dir, "no-such-dir", "x.prof")
		code, out, errs = run(t, "bench", "--db", url, "--workload", "drain", "--jobs", "500", flag, missing)
		if code == 0 || strings.Contains(out, "bench drain") || !strings.Contains(errs, "no-such-dir") {
			t.Errorf("bench %s into a missing directory = %d:\n%s%s", flag, code, out, errs)
		}
	}
}
