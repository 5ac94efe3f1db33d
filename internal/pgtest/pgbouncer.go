package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvVia names the route tests reach the database by: unset (or "direct")
// straight to the server, "pgbouncer" through a PgBouncer in transaction
// mode that pgtest starts. RunMainTwice sets it for its second run.
const EnvVia = "QUEUEGEN_TEST_VIA"

// PooledExecMode is the pgx query exec mode of URLs that go through
// PgBouncer: it prepares no named statement, which a transaction-mode
// pooler would hand to another client.
const PooledExecMode = "cache_describe"

// ViaPgBouncer reports whether this test process reaches the database
// through PgBouncer.
func ViaPgBouncer() bool { return os.Getenv(EnvVia) == "pgbouncer" }

// RunMainTwice is RunMain, then, when the tests passed, the same tests
// again in a new process of the same test binary through a PgBouncer in
// transaction mode (EnvVia=pgbouncer): every URL the tests get is then the
// pooler's, except those of Direct. Use it from TestMain of a suite that
// must hold behind a pooler:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.RunMainTwice(m)) }
//
// notAgain are regular expressions of tests the second run leaves out
// (go test -skip), for tests a pooler has nothing to do with, such as
// another engine's.
func RunMainTwice(m *testing.M, notAgain ...string) int {
	code := RunMain(m)
	if code != 0 {
		return code
	}
	return RerunViaPgBouncer(notAgain...)
}

// RerunViaPgBouncer runs this test binary again, with its arguments,
// through PgBouncer (the second half of RunMainTwice, for a TestMain that
// has work to do between the runs), leaving out the tests notAgain
// matches. In the rerun itself it does nothing.
func RerunViaPgBouncer(notAgain ...string) int {
	if os.Getenv(EnvVia) != "" {
		return 0
	}
	fmt.Println("pgtest: the same tests again, through PgBouncer in transaction mode")
	cmd := exec.Command(os.Args[0], rerunArgs(os.Args[1:], notAgain)...)
	cmd.Env = append(os.Environ(), EnvVia+"=pgbouncer")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if exit, ok := err.(*exec.ExitError); ok {
			return exit.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	return 0
}

// rerunArgs are the test binary's arguments with notAgain added to its
// -test.skip pattern (joined with any the caller gave).
func rerunArgs(args, notAgain []string) []string {
	if len(notAgain) == 0 {
		return args
	}
	skip := strings.Join(notAgain, "|")
	out := make([]string, 0, len(args)+1)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "-test.skip="):
			skip += "|" + strings.TrimPrefix(a, "-test.skip=")
		case a == "-test.skip" && i+1 < len(args):
			skip += "|" + args[i+1]
			i++
		default:
			out = append(out, a)
		}
	}
	return append(out, "-test.skip="+skip)
}

// bouncer is a PgBouncer this process started, in front of one server.
type bouncer struct {
	cmd    *exec.Cmd
	dir    string
	port   int
	server *url.URL // the server it pools
}

var (
	bouncerMu sync.Mutex
	bouncers  = map[string]*bouncer{} // by the server's host:port
	direct    = map[string]string{}   // pooled host:port → server host:port
)

// Route is url as this test process reaches it: unchanged when tests go
// straight to the server; through the PgBouncer in front of url's server
// (started on first use, stopped when the process exits) when ViaPgBouncer.
func Route(t testing.TB, dbURL string) string {
	t.Helper()
	if !ViaPgBouncer() {
		return dbURL
	}
	return pooled(t, dbURL)
}

func pooled(t testing.TB, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	b, err := bouncerFor(u)
	if err != nil {
		t.Fatalf("pgtest: cannot start PgBouncer (install it: apt-get install -y pgbouncer): %v", err)
	}
	pooled := *u
	pooled.Host = fmt.Sprintf("127.0.0.1:%d", b.port)
	q := pooled.Query()
	q.Set("default_query_exec_mode", PooledExecMode)
	pooled.RawQuery = q.Encode()
	return pooled.String()
}

// Pooled is url through a PgBouncer in transaction mode in front of its
// server, whatever the route of this test process: for tests of what
// happens behind a pooler.
func Pooled(t testing.TB, dbURL string) string {
	t.Helper()
	return pooled(t, Direct(dbURL))
}

// Direct is the URL of the server behind url: url itself, unless it goes
// through a PgBouncer of this process. Tests give it to what must not go
// through a pooler (a LISTENing connection, an administrator's session).
func Direct(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	bouncerMu.Lock()
	server, ok := direct[u.Host]
	bouncerMu.Unlock()
	if !ok {
		return dbURL
	}
	u.Host = server
	q := u.Query()
	q.Del("default_query_exec_mode")
	u.RawQuery = q.Encode()
	return u.String()
}

func bouncerFor(server *url.URL) (*bouncer, error) {
	bouncerMu.Lock()
	defer bouncerMu.Unlock()
	if b := bouncers[server.Host]; b != nil {
		return b, nil
	}
	b, err := startBouncer(server)
	if err != nil {
		return nil, err
	}
	bouncers[server.Host] = b
	direct[fmt.Sprintf("127.0.0.1:%d", b.port)] = server.Host
	return b, nil
}

// startBouncer runs pgbouncer in front of server, in transaction mode
// with trust authentication, as an unprivileged user when running as root
// (pgbouncer refuses to run as root).
func startBouncer(server *url.URL) (*bouncer, error) {
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/pgbouncer"); serr != nil {
			return nil, fmt.Errorf("pgbouncer is not installed")
		}
		bin = "/usr/sbin/pgbouncer"
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		if cred, _, err = unprivilegedCredential(); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "pgtest-pgbouncer-")
	if err != nil {
		return nil, err
	}
	host, port := server.Hostname(), server.Port()
	if port == "" {
		port = "5432"
	}
	for attempt := 0; attempt < 3; attempt++ {
		listen, err := freePort()
		if err != nil {
			return nil, err
		}
		ini := fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 40
max_db_connections = 0
ignore_startup_parameters = extra_float_digits,search_path,application_name,default_transaction_isolation
server_reset_query =
server_login_retry = 1
logfile = %s
pidfile = %s
`, host, port, listen, filepath.Join(dir, "userlist.txt"), filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
		os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(ini), 0o644)
		os.WriteFile(filepath.Join(dir, "userlist.txt"), []byte("\"postgres\" \"\"\n\"root\" \"\"\n"), 0o644)
		if cred != nil {
			filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Chown(p, int(cred.Uid), int(cred.Gid)) })
		}
		cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
		cmd.Dir = dir
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		b := &bouncer{cmd: cmd, dir: dir, port: listen, server: server}
		if err := b.waitReady(server); err == nil {
			return b, nil
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
	return nil, fmt.Errorf("pgbouncer did not start:\n%s", tail(log, 2000))
}

// waitReady waits until a query goes through the pooler to the server.
func (b *bouncer) waitReady(server *url.URL) error {
	u := *server
	u.Host = "127.0.0.1:" + strconv.Itoa(b.port)
	q := u.Query()
	q.Set("default_query_exec_mode", PooledExecMode)
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var conn *pgx.Conn
		if conn, err = pgx.Connect(ctx, u.String()); err == nil {
			_, err = conn.Exec(ctx, "SELECT 1")
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// stopBouncers stops every PgBouncer this process started.
func stopBouncers() {
	bouncerMu.Lock()
	defer bouncerMu.Unlock()
	for key, b := range bouncers {
		b.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { b.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			b.cmd.Process.Kill()
			<-done
		}
		os.RemoveAll(b.dir)
		delete(bouncers, key)
	}
}
