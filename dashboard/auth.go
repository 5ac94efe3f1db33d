package dashboard

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// authorized checks the request's credentials against BasicAuth or
// BearerToken; with neither, every request is authorized (the
// application mounting the handler authenticates, or `queuegen ui`
// listens on loopback only).
func (h *Handler) authorized(r *http.Request) bool {
	switch {
	case h.cfg.user != "":
		user, password, ok := r.BasicAuth()
		userOK, passwordOK := equal(user, h.cfg.user), equal(password, h.cfg.password) // both compared, always
		return ok && userOK && passwordOK
	case h.cfg.token != "":
		// Schemes are case-insensitive (RFC 9110, 11.1); r.BasicAuth
		// takes any case of Basic.
		if scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
			return equal(strings.TrimLeft(token, " "), h.cfg.token)
		}
		_, password, ok := r.BasicAuth()
		return ok && equal(password, h.cfg.token)
	}
	return true
}

// equal compares in constant time.
func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
