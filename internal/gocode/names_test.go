package gocode

import "testing"

// TestName: snake_case names become Go names as golint spells them, which
// is how sqlc, given Initialisms, names the same columns.
func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"url": "URL", "user_id": "UserID", "id": "ID", "http_status": "HTTPStatus", "c_uuid": "CUUID",
		"api_key_ttl": "APIKeyTTL", "u_r_l": "URL", "a__b": "AB", "urls": "Urls", "2fa_code": "_2faCode",
		"email": "Email", "utf8_text": "UTF8Text", "db_now": "DbNow",
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}
