package cli

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestLoopbackOnly: a dashboard without authentication answers requests
// addressed to loopback names and refuses any other Host, as a page that
// rebound its own name to 127.0.0.1 would send.
func TestLoopbackOnly(t *testing.T) {
	h := loopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for host, want := range map[string]int{
		"127.0.0.1:8080": http.StatusOK, "localhost:8080": http.StatusOK, "[::1]:8080": http.StatusOK, "localhost": http.StatusOK,
		"rebind.attacker.example:8080": http.StatusForbidden, "192.0.2.1:8080": http.StatusForbidden, "": http.StatusForbidden,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %q: %d, want %d", host, w.Code, want)
		}
	}
}
