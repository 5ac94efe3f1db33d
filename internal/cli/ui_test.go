package cli_test

import (
	"strings"
	"testing"
)

// TestUIRefusesAnOpenAddressWithoutAuth: the dashboard listens beyond
// loopback only with --auth, whose credentials must be set; each refusal
// is a usage error that names what to do, before any connection.
func TestUIRefusesAnOpenAddressWithoutAuth(t *testing.T) {
	t.Setenv("QUEUEGEN_UI_USER", "")
	t.Setenv("QUEUEGEN_UI_PASSWORD", "")
	t.Setenv("QUEUEGEN_UI_TOKEN", "short")
	db := "postgres://nobody@127.0.0.1:1/none"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "0.0.0.0:8080"}, "listens beyond loopback: give --auth basic or --auth token"},
		{[]string{"--addr", ":8080"}, "listens beyond loopback"},
		{[]string{"--addr", "192.0.2.1:8080"}, "listens beyond loopback"},
		{[]string{"--addr", "0.0.0.0:8080", "--auth", "basic"}, "set both"},
		{[]string{"--addr", "0.0.0.0:8080", "--auth", "token"}, "at least 16 characters"},
		{[]string{"--auth", "magic"}, `--auth "magic": want basic or token`},
		{[]string{"--addr", "nonsense"}, "--addr nonsense"},
	} {
		code, out, errs := run(t, append([]string{"ui", "--db", db}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("ui %v = %d, want 2 and %q:\n%s%s", c.args, code, c.want, out, errs)
		}
	}
}
