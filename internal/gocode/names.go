package gocode

import "strings"

// Initialisms are the words a Go name writes in capitals (URL, not Url),
// in lower case as they appear in a snake_case SQL name: golint's list of
// common initialisms. Name applies them, and the generated sqlc.yaml gives
// sqlc the same list, so that sqlc's struct fields and the accessors' agree.
var Initialisms = []string{
	"acl", "api", "ascii", "cpu", "css", "dns", "eof", "guid", "html", "http", "https", "id", "ip",
	"json", "lhs", "qps", "ram", "rhs", "rpc", "sla", "smtp", "sql", "ssh", "tcp", "tls", "ttl",
	"udp", "ui", "uid", "uuid", "uri", "url", "utf8", "vm", "xml", "xmpp", "xsrf", "xss",
}

var initialisms = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range Initialisms {
		m[w] = true
	}
	return m
}()

// Name is the exported Go name of a snake_case SQL name, as sqlc writes
// it with Initialisms: each part between underscores capitalised, or all
// in capitals when it is an initialism (user_id → UserID, url → URL,
// http_status → HTTPStatus); "_" first when it would start with a digit.
func Name(ident string) string {
	var b strings.Builder
	for _, part := range strings.Split(ident, "_") {
		switch {
		case initialisms[part]:
			b.WriteString(strings.ToUpper(part))
		case part != "":
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	out := b.String()
	if out != "" && out[0] >= '0' && out[0] <= '9' {
		out = "_" + out
	}
	return out
}
