// Package mytest gives each test its own fresh database on a real MySQL or
// MariaDB server, so that tests in many packages can run in parallel
// without interfering with each other; it is pgtest's counterpart for the
// MySQL engine.
//
// The server is resolved once per test process: the admin DSN in the
// environment variable QUEUEGEN_TEST_MYSQL_DSN if set (go-sql-driver/mysql
// form, user:password@tcp(host:port)/, a user allowed to CREATE DATABASE),
// else root without a password on 127.0.0.1:3306. When neither answers,
// every call fails the test with a message explaining how to provide a
// server: tests never skip for lack of a database.
package mytest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queuegen/queuegen/internal/engine/mysql/myconfig"
)

// EnvDSN is the environment variable naming the admin DSN of the server to
// create test databases on.
const EnvDSN = "QUEUEGEN_TEST_MYSQL_DSN"

// localhost is the admin DSN tried when EnvDSN is not set.
const localhost = "root@tcp(127.0.0.1:3306)/"

const howToProvide = "set " + EnvDSN + "=user:password@tcp(host:port)/, " +
	"or start MariaDB on 127.0.0.1:3306 (start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd), " +
	"or install it (apt-get install -y mariadb-server); .ci/run does both"

const adminTimeout = 30 * time.Second

var (
	mu       sync.Mutex
	resolved bool
	admin    *mysql.Config
	adminErr error
)

// ServerDSN returns the admin DSN of the server being used.
func ServerDSN(t testing.TB) string {
	t.Helper()
	cfg, err := resolve()
	if err != nil {
		t.Fatalf("mytest: %v", err)
	}
	return cfg.FormatDSN()
}

// DSN returns the DSN of a brand-new, empty database created for this test
// (configured as queuegen's generated code needs, myconfig.Config), dropped in
// t.Cleanup.
func DSN(t testing.TB) string {
	t.Helper()
	cfg, err := resolve()
	if err != nil {
		t.Fatalf("mytest: %v", err)
	}
	name, err := databaseName(t.Name())
	if err != nil {
		t.Fatalf("mytest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	if err := exec(ctx, cfg, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("mytest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		if err := exec(ctx, cfg, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("mytest: drop database %s: %v", name, err)
		}
	})
	db := myconfig.Config(cfg)
	db.DBName = name
	return db.FormatDSN()
}

// DB returns a *sql.DB on a fresh database (DSN), closed in t.Cleanup.
func DB(t testing.TB) *sql.DB {
	t.Helper()
	return Open(t, DSN(t))
}

// Open opens dsn and closes it in t.Cleanup.
func Open(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatalf("mytest: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func resolve() (*mysql.Config, error) {
	mu.Lock()
	defer mu.Unlock()
	if resolved {
		return admin, adminErr
	}
	resolved = true
	dsn, fromEnv := lookupEnv()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		adminErr = fmt.Errorf("%s: %v", EnvDSN, err)
		return nil, adminErr
	}
	cfg.Timeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := exec(ctx, cfg, "SELECT 1"); err != nil {
		where := "127.0.0.1:3306 as root"
		if fromEnv {
			where = EnvDSN
		}
		adminErr = fmt.Errorf("no MySQL or MariaDB server at %s (%v): %s", where, err, howToProvide)
		return nil, adminErr
	}
	admin = cfg
	return admin, nil
}

func lookupEnv() (string, bool) {
	if v := strings.TrimSpace(os.Getenv(EnvDSN)); v != "" {
		return v, true
	}
	return localhost, false
}

func exec(ctx context.Context, cfg *mysql.Config, stmt string) error {
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// databaseName is qg_<test>_<random>, at most 64 characters.
func databaseName(testName string) (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	suffix := hex.EncodeToString(b)
	var stem strings.Builder
	under := false
	for _, r := range strings.ToLower(testName) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if under && stem.Len() > 0 {
				stem.WriteByte('_')
			}
			under = false
			stem.WriteRune(r)
			continue
		}
		under = true
	}
	s := stem.String()
	if limit := 64 - len("qg__") - len(suffix); len(s) > limit {
		s = s[:limit]
	}
	return "qg_" + s + "_" + suffix, nil
}
