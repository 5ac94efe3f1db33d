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

// TestUIRefusesWeakCredentials: --auth basic and --auth token hold the
// password and the token to one rule (at least 16 characters, not all
// white space), and --auth basic refuses a user name with a colon (which
// could never log in): usage errors, before any connection.
func TestUIRefusesWeakCredentials(t *testing.T) {
	db := "postgres://nobody@127.0.0.1:1/none"
	for _, c := range []struct {
		auth, user, password, token string
		want                        string
	}{
		{"basic", "ops", "x", "", "$QUEUEGEN_UI_PASSWORD: want a secret of at least 16 characters, not all white space"},
		{"basic", "ops", "0123456789abcde", "", "at least 16 characters"},
		{"basic", "ops", strings.Repeat(" ", 16), "", "not all white space"},
		{"basic", "ops:admin", "0123456789abcdef", "", `$QUEUEGEN_UI_USER: user name "ops:admin" holds a colon`},
		{"token", "", "", strings.Repeat(" ", 16), "--auth token reads $QUEUEGEN_UI_TOKEN: want a secret of at least 16 characters, not all white space"},
		{"token", "", "", "0123456789abcde", "at least 16 characters"},
	} {
		t.Setenv("QUEUEGEN_UI_USER", c.user)
		t.Setenv("QUEUEGEN_UI_PASSWORD", c.password)
		t.Setenv("QUEUEGEN_UI_TOKEN", c.token)
		code, out, errs := run(t, "ui", "--db", db, "--addr", "0.0.0.0:8080", "--auth", c.auth)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("ui --auth %s (user %q, password %q, token %q) = %d, want 2 and %q:\n%s%s", c.auth, c.user, c.password, c.token, code, c.want, out, errs)
		}
	}
}
