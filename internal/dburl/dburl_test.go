package dburl_test

import (
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/dburl"
)

// TestParseEngines: each engine's addresses are named after it; a scheme
// queuegen does not speak is refused with the ones it does.
func TestParseEngines(t *testing.T) {
	for address, want := range map[string]string{
		"postgres://u@127.0.0.1:5432/db":                    dburl.PostgreSQL,
		"host=127.0.0.1 dbname=db":                          dburl.PostgreSQL,
		"mysql://root@127.0.0.1:3306/db":                    dburl.MySQL,
		"root@tcp(127.0.0.1:3306)/db":                       dburl.MySQL,
		"sqlserver://sa:pw@127.0.0.1:1433?database=db":      dburl.SQLServer,
		"sqlserver://sa:pw@127.0.0.1/SQLEXPRESS?database=d": dburl.SQLServer,
	} {
		if db, err := dburl.Parse(address); err != nil || db.Engine != want || db.URL != address {
			t.Errorf("Parse(%q) = %+v, %v; want engine %s", address, db, err, want)
		}
	}
	_, err := dburl.Parse("oracle://scott@127.0.0.1/db")
	if err == nil || !strings.Contains(err.Error(), "sqlserver://") || !strings.Contains(err.Error(), "mysql://") {
		t.Errorf("an oracle:// URL = %v", err)
	}
	if _, err := dburl.Parse("sqlserver://sa:s3cret@127.0.0.1?database=a&Database=b"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a SQL Server URL naming its database twice = %v", err)
	}
}

// TestRedact: a password leaves the message, whether the URL's own or a
// sqlserver:// URL's password parameter.
func TestRedact(t *testing.T) {
	for _, address := range []string{
		"postgres://u:s3cret@127.0.0.1/db",
		"u:s3cret@tcp(127.0.0.1:3306)/db",
		"sqlserver://sa:s3cret@127.0.0.1?database=db",
		"sqlserver://sa@127.0.0.1?database=db&password=s3cret",
	} {
		if got := dburl.Redact("login with s3cret failed", address); got != "login with xxxxx failed" {
			t.Errorf("Redact for %s = %q", address, got)
		}
	}
}
