package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
)

// csrf issues and checks the token every action carries: a random nonce
// in a SameSite=Strict, HttpOnly cookie, and in each form the nonce's
// HMAC under a key the handler draws at start. A page from another site
// can neither read the cookie nor compute the HMAC, and a cookie planted
// by a sibling host fails the HMAC.
type csrf struct {
	key  []byte
	path string
}

const (
	csrfCookie = "queuegen_csrf"
	csrfField  = "csrf"
)

// token returns the token for r's forms, setting the cookie when r has
// none.
func (c csrf) token(w http.ResponseWriter, r *http.Request) string {
	nonce := ""
	if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) == 32 {
		nonce = ck.Value
	} else {
		b := make([]byte, 16)
		rand.Read(b)
		nonce = hex.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: nonce, Path: c.path, HttpOnly: true,
			Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	}
	return c.sign(nonce)
}

func (c csrf) sign(nonce string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(nonce))
	return hex.EncodeToString(m.Sum(nil))
}

// valid checks r's form token against its cookie.
func (c csrf) valid(r *http.Request) bool {
	ck, err := r.Cookie(csrfCookie)
	if err != nil || len(ck.Value) != 32 {
		return false
	}
	got, err := hex.DecodeString(r.PostFormValue(csrfField))
	if err != nil {
		return false
	}
	want, _ := hex.DecodeString(c.sign(ck.Value))
	return hmac.Equal(got, want)
}
