package mysql

import "testing"

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "''"},
		{"eu", "'eu'"},
		{"it's", "'it''s'"},
		{`a\b`, "CONCAT('a', CHAR(92 USING utf8mb4), 'b')"},
		{"Hello;\nit's -- x", "CONCAT('Hello;', CHAR(10 USING utf8mb4), 'it''s -- x')"},
		{"\r\n", "CONCAT(CHAR(13 USING utf8mb4), CHAR(10 USING utf8mb4))"},
		{`\`, "CHAR(92 USING utf8mb4)"},
	} {
		if got := quote(c.in); got != c.want {
			t.Errorf("quote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
