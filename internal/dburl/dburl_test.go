package dburl_test

import (
	"strings"
	"testing"
	"time"

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

// TestMySQLConfig: what the generated MySQL code relies on is set whatever
// the DSN says, clientFoundRows included (with it, an upsert that changes
// nothing reports a row, and every node would push a periodic job's tick).
func TestMySQLConfig(t *testing.T) {
	db, err := dburl.Parse("root@tcp(127.0.0.1:3306)/db?clientFoundRows=true&parseTime=false&loc=Local")
	if err != nil {
		t.Fatal(err)
	}
	if c := db.MySQL; c.ClientFoundRows || !c.ParseTime || c.Loc != time.UTC || !c.InterpolateParams {
		t.Errorf("config = clientFoundRows %v, parseTime %v, loc %v, interpolateParams %v; want false, true, UTC, true",
			c.ClientFoundRows, c.ParseTime, c.Loc, c.InterpolateParams)
	}
}
