package dashboard_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/dashboard"
	"github.com/queuegen/queuegen/internal/dburl"
)

// TestWeakCredentialsRefused: BasicAuth and BearerToken hold passwords and
// tokens to one rule (at least 16 characters, not all white space), and a
// user name with a colon, which basic authentication cannot send, is
// refused; each before anything connects.
func TestWeakCredentialsRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		opt  dashboard.Option
		want string
	}{
		{dashboard.BasicAuth("ops", "x"), "dashboard.BasicAuth: the password: want a secret of at least 16 characters, not all white space"},
		{dashboard.BasicAuth("ops", "0123456789abcde"), "at least 16 characters"},
		{dashboard.BasicAuth("ops", strings.Repeat(" ", 16)), "not all white space"},
		{dashboard.BasicAuth("", "0123456789abcdef"), "empty user name"},
		{dashboard.BasicAuth("ops:admin", "0123456789abcdef"), `user name "ops:admin" holds a colon`},
		{dashboard.BearerToken(strings.Repeat(" ", 16)), "dashboard.BearerToken: want a secret of at least 16 characters, not all white space"},
		{dashboard.BearerToken("\t\n" + strings.Repeat(" ", 20)), "not all white space"},
		{dashboard.BearerToken("0123456789abcde"), "at least 16 characters"},
	} {
		if _, err := dashboard.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1", c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New = %v, want an error with %q", err, c.want)
		}
	}
	// Sixteen characters, multibyte ones too, are enough.
	if err := dashboard.CheckSecret("ünïcödé-pässwörd"); err != nil {
		t.Errorf("CheckSecret of 16 characters: %v", err)
	}
}

// TestAuthSchemesAnyCase: the Basic and Bearer schemes are taken in any
// case (RFC 9110: schemes are case-insensitive); a wrong token is refused
// in any case too.
func TestAuthSchemesAnyCase(t *testing.T) {
	t.Parallel()
	const token = "0123456789abcdef0123"
	bearer := newSite(t, dburl.PostgreSQL, dashboard.BearerToken(token))
	basic := newSite(t, dburl.PostgreSQL, dashboard.BasicAuth("ops", "correct horse battery"))
	creds := base64.StdEncoding.EncodeToString([]byte("ops:correct horse battery"))
	for _, c := range []struct {
		s      *site
		header string
		want   int
	}{
		{bearer, "Bearer " + token, http.StatusOK},
		{bearer, "bearer " + token, http.StatusOK},
		{bearer, "BEARER " + token, http.StatusOK},
		{bearer, "bEaReR  " + token, http.StatusOK},
		{bearer, "bearer " + token + "x", http.StatusUnauthorized},
		{bearer, "bearer", http.StatusUnauthorized},
		{bearer, "Token " + token, http.StatusUnauthorized},
		{basic, "Basic " + creds, http.StatusOK},
		{basic, "basic " + creds, http.StatusOK},
		{basic, "BASIC " + creds, http.StatusOK},
		{basic, "basic " + base64.StdEncoding.EncodeToString([]byte("ops:wrong")), http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest(http.MethodGet, c.s.srv.URL+"/", nil)
		req.Header.Set("Authorization", c.header)
		resp, err := c.s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Authorization: %s = %d, want %d", c.header, resp.StatusCode, c.want)
		}
	}
}

// TestSecurityHeadersOnEveryResponse: refusals (401 without credentials,
// 403 for a host name other than loopback's or a POST without its CSRF
// token, 404) carry the same security headers as pages.
func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	t.Parallel()
	const token = "0123456789abcdef0123"
	authed := newSite(t, dburl.PostgreSQL, dashboard.BearerToken(token))
	loopback := newSite(t, dburl.PostgreSQL, dashboard.LoopbackHostsOnly())
	for _, c := range []struct {
		name   string
		s      *site
		method string
		path   string
		host   string
		auth   bool
		want   int
	}{
		{"page", authed, http.MethodGet, "/", "", true, http.StatusOK},
		{"no credentials", authed, http.MethodGet, "/", "", false, http.StatusUnauthorized},
		{"asset without credentials", authed, http.MethodGet, "/assets/htmx.min.js", "", false, http.StatusUnauthorized},
		{"not found", authed, http.MethodGet, "/no/such/page", "", true, http.StatusNotFound},
		{"no such job", authed, http.MethodGet, "/queues/email/jobs/999999", "", true, http.StatusNotFound},
		{"no CSRF token", authed, http.MethodPost, "/queues/email/pause", "", true, http.StatusForbidden},
		{"loopback page", loopback, http.MethodGet, "/", "", false, http.StatusOK},
		{"rebound host name", loopback, http.MethodGet, "/", "rebind.attacker.example:8080", false, http.StatusForbidden},
		{"other address", loopback, http.MethodGet, "/", "192.0.2.1", false, http.StatusForbidden},
	} {
		req, _ := http.NewRequest(c.method, c.s.srv.URL+c.path, strings.NewReader(url.Values{}.Encode()))
		if c.host != "" {
			req.Host = c.host
		}
		if c.auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != c.want || h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || h.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("%s: %s %s = %d (want %d), headers %v", c.name, c.method, c.path, resp.StatusCode, c.want, h)
		}
	}
}
