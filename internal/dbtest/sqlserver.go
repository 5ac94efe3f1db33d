package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuegen/queuegen/internal/dburl"
)

// EnvSQLServer is the environment variable naming the SQL Server the
// suites run on besides PostgreSQL and MySQL: a go-mssqldb URL,
// sqlserver://user:password@host:1433?database=master, of a login that
// may CREATE DATABASE (add &encrypt=disable, or
// &TrustServerCertificate=true, for a server without a trusted
// certificate). Unset, no suite runs on SQL Server.
const EnvSQLServer = "QUEUEGEN_SQLSERVER_URL"

const sqlServerHowTo = "set " + EnvSQLServer + "=sqlserver://user:password@host:1433?database=master (a login that may CREATE DATABASE)"

// sqlServerTimeout bounds each statement on the server itself.
const sqlServerTimeout = 60 * time.Second

// sqlServer is the server of EnvSQLServer, connected to once per test
// process.
var sqlServer struct {
	once sync.Once
	// admin is a handle on the database the URL names; url is the URL.
	admin *sql.DB
	url   *url.URL
	err   error
	// create serialises CREATE and DROP DATABASE, which both take a lock
	// on the model database.
	create sync.Mutex
}

// sqlServerAdmin connects to the server of EnvSQLServer, once, or says
// why it cannot.
func sqlServerAdmin() (*sql.DB, *url.URL, error) {
	s := &sqlServer
	s.once.Do(func() {
		address := strings.TrimSpace(os.Getenv(EnvSQLServer))
		if address == "" {
			s.err = fmt.Errorf("no SQL Server for this test: %s", sqlServerHowTo)
			return
		}
		if s.admin, s.url, s.err = connectSQLServer(address); s.err != nil {
			s.err = fmt.Errorf("no SQL Server at $%s (%s): %s", EnvSQLServer, dburl.Redact(s.err.Error(), address), sqlServerHowTo)
		}
	})
	return s.admin, s.url, s.err
}

// connectSQLServer opens a handle on address, a sqlserver:// URL, and
// pings it.
func connectSQLServer(address string) (*sql.DB, *url.URL, error) {
	parsed, err := dburl.Parse(address)
	if err != nil {
		return nil, nil, err
	}
	if parsed.Engine != dburl.SQLServer {
		return nil, nil, errors.New("not a sqlserver:// URL")
	}
	u, err := url.Parse(address)
	if err != nil {
		return nil, nil, err
	}
	db, err := parsed.Open()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, u, nil
}

// sqlServerDatabase creates a database for t on the server of
// EnvSQLServer, dropped when t ends (after the handles on it that t closes
// are closed: cleanups run last first), and returns its URL: the server's
// with database set to it.
func sqlServerDatabase(t testing.TB) string {
	t.Helper()
	admin, server, err := sqlServerAdmin()
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	name, err := sqlServerName(t.Name())
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	quoted := "[" + name + "]"
	if err := sqlServerAdminExec(admin, "CREATE DATABASE "+quoted); err != nil {
		t.Fatalf("dbtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		// ROLLBACK IMMEDIATE ends the sessions a test left on it.
		if err := sqlServerAdminExec(admin, "ALTER DATABASE "+quoted+" SET SINGLE_USER WITH ROLLBACK IMMEDIATE; DROP DATABASE "+quoted); err != nil {
			t.Errorf("dbtest: drop database %s: %v", name, err)
		}
	})
	u := *server
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "database") { // go-mssqldb's keys are case-insensitive
			q.Del(k)
		}
	}
	q.Set("database", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// sqlServerAdminExec runs stmt on the admin handle, one CREATE or DROP
// DATABASE at a time.
func sqlServerAdminExec(admin *sql.DB, stmt string) error {
	sqlServer.create.Lock()
	defer sqlServer.create.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), sqlServerTimeout)
	defer cancel()
	_, err := admin.ExecContext(ctx, stmt)
	return err
}

// sqlServerName is qg_<test>_<random>: the test's name in lower-case
// letters and digits, its other runs of characters made one underscore,
// cut short to keep the name within SQL Server's 128 characters.
func sqlServerName(test string) (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	words := strings.FieldsFunc(strings.ToLower(test), func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
	stem := strings.Join(words, "_")
	return "qg_" + stem[:min(len(stem), 100)] + "_" + hex.EncodeToString(b), nil
}
