package mytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queuegen/queuegen/internal/engine/mysql/myconfig"
)

// Server is a private MariaDB server a test owns, for tests that must
// restart or crash the server (never the shared one DSN uses): its own data
// directory, socket and port, root without a password on 127.0.0.1. It is
// pgtest.Cluster's counterpart and needs MariaDB's server binaries
// (mariadbd, mariadb-install-db: apt-get install -y mariadb-server).
type Server struct {
	dir, data, sock, errLog, mariadbd string
	port                              int

	mu     sync.Mutex
	cmd    *execpkg.Cmd
	exited chan struct{} // closed when cmd has exited
}

// ServerDatabase is the database a Server creates at its first start,
// which DSN names.
const ServerDatabase = "queuegen"

// serverStartTimeout bounds a start (or a stop) of a private server; one
// takes well under a second on an idle machine.
const serverStartTimeout = 90 * time.Second

// NewServer starts a private MariaDB server for t and stops it, removing
// its files, in t.Cleanup. It fails the test, saying how to install the
// server, when it cannot.
//
// Its data directory is a copy of one initialized by mariadb-install-db
// once per test process (kept while a server of the process runs), so
// that servers after the first start in about a second.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s, err := newServer()
	if err != nil {
		t.Fatalf("mytest: cannot start a private MariaDB server (install it: apt-get install -y mariadb-server): %v", err)
	}
	t.Cleanup(func() {
		if err := s.stop(syscall.SIGTERM); err != nil {
			t.Logf("mytest: stopping the private server: %v", err)
		}
		os.RemoveAll(s.dir)
		releaseTemplate()
	})
	return s
}

func newServer() (*Server, error) {
	bins, err := findMariaDB()
	if err != nil {
		return nil, err
	}
	tmpl, err := acquireTemplate(bins)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			releaseTemplate()
		}
	}()
	dir, err := os.MkdirTemp("", "mytest-server-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, data: filepath.Join(dir, "data"), sock: filepath.Join(dir, "sock"),
		errLog: filepath.Join(dir, "error.log"), mariadbd: bins.mariadbd}
	if err := copyTree(tmpl, s.data); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("copying the initialized data directory: %w", err)
	}
	// The port is free when chosen but may be taken before the server
	// binds it: try a few.
	for range 3 {
		if s.port, err = freePort(); err != nil {
			break
		}
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	if err := exec(ctx, s.adminConfig(), "CREATE DATABASE "+ServerDatabase+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		s.stop(syscall.SIGKILL)
		os.RemoveAll(dir)
		return nil, fmt.Errorf("create database %s: %w", ServerDatabase, err)
	}
	started = true
	return s, nil
}

// Port is the TCP port the server listens on (127.0.0.1), the same across
// restarts.
func (s *Server) Port() int { return s.port }

// DSN is the DSN of the server's database ServerDatabase, configured as
// queuegen's generated code needs (myconfig.Config). It stays valid across
// restarts.
func (s *Server) DSN() string {
	cfg := myconfig.Config(s.adminConfig())
	cfg.DBName = ServerDatabase
	return cfg.FormatDSN()
}

// AdminDSN is the DSN of the server's root user, naming no database.
func (s *Server) AdminDSN() string { return s.adminConfig().FormatDSN() }

func (s *Server) adminConfig() *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	cfg.Timeout = 2 * time.Second
	return cfg
}

// Restart shuts the server down cleanly (SIGTERM: every session is
// disconnected, as in a failover or an upgrade) and starts it again on the
// same data directory and port, returning once it accepts connections.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("mytest: stopping the private server: %v", err)
	}
	s.Start(t)
}

// Crash kills the server with SIGKILL, as a crash does, and starts it
// again: InnoDB recovers every committed transaction (the log is written
// at each commit; a process crash loses nothing the OS was handed).
func (s *Server) Crash(t testing.TB) {
	t.Helper()
	if err := s.stop(syscall.SIGKILL); err != nil {
		t.Fatalf("mytest: killing the private server: %v", err)
	}
	s.Start(t)
}

// Stop shuts the server down cleanly: the database is unreachable until
// Start.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("mytest: stopping the private server: %v", err)
	}
}

// Start starts a stopped server and waits until it accepts connections.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatalf("mytest: starting the private server: %v", err)
	}
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("the server is running")
	}
	args := append([]string{"--no-defaults", "--datadir=" + s.data}, serverOptions...)
	args = append(args,
		"--socket="+s.sock, "--port="+strconv.Itoa(s.port), "--bind-address=127.0.0.1",
		"--pid-file="+filepath.Join(s.dir, "mariadbd.pid"), "--log-error="+s.errLog)
	if os.Geteuid() == 0 {
		args = append(args, "--user=root") // mariadbd refuses root otherwise
	}
	cmd := osexec(s.mariadbd, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited

	cfg := s.adminConfig()
	cfg.Timeout = time.Second
	deadline := time.Now().Add(serverStartTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := exec(ctx, cfg, "SELECT 1")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("mariadbd exited at start (%v):\n%s", cmd.ProcessState, logTail(s.errLog))
		default:
		}
		if time.Now().After(deadline) {
			s.kill(syscall.SIGKILL)
			return fmt.Errorf("mariadbd did not accept connections within %s (%v):\n%s", serverStartTimeout, err, logTail(s.errLog))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// stop signals the server and waits until it has exited (a SIGTERM that
// does not end it in time is followed by SIGKILL).
func (s *Server) stop(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	return s.kill(sig)
}

func (s *Server) kill(sig syscall.Signal) error {
	defer func() { s.cmd = nil }()
	s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
		return nil
	case <-time.After(serverStartTimeout):
	}
	s.cmd.Process.Kill()
	<-s.exited
	return fmt.Errorf("mariadbd did not stop within %s of %v; killed", serverStartTimeout, sig)
}

// serverOptions are the options of both mariadb-install-db's bootstrap
// and the server: small InnoDB files (the default 96 MB redo log is most
// of an initialization's time), no binary log, no name resolution, and
// the log written but not flushed at each commit (a killed process loses
// nothing: the OS has it).
var serverOptions = []string{
	"--skip-log-bin",
	"--skip-name-resolve",
	"--innodb-log-file-size=8M",
	"--innodb-buffer-pool-size=64M",
	"--innodb-flush-log-at-trx-commit=2",
	"--max-connections=500",
	"--character-set-server=utf8mb4",
	"--collation-server=utf8mb4_bin",
}

type mariadbBinaries struct{ mariadbd, installDB string }

// findMariaDB finds the server and its initializer on PATH or where
// packages install them (/usr/sbin is often not on a test's PATH).
func findMariaDB() (mariadbBinaries, error) {
	find := func(names ...string) string {
		for _, name := range names {
			if p, err := execpkg.LookPath(name); err == nil {
				return p
			}
			for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/libexec", "/usr/bin", "/usr/local/bin", "/usr/local/mysql/bin"} {
				p := filepath.Join(dir, name)
				if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
					return p
				}
			}
		}
		return ""
	}
	b := mariadbBinaries{mariadbd: find("mariadbd"), installDB: find("mariadb-install-db")}
	if b.mariadbd == "" || b.installDB == "" {
		return b, errors.New("mariadbd or mariadb-install-db not found on PATH, in /usr/sbin or /usr/bin")
	}
	return b, nil
}

// The initialized data directory that servers copy: made once and kept
// while some server of the process is running, so that tests that run in
// parallel initialize one; the last server to stop removes it.
var template struct {
	mu    sync.Mutex
	dir   string
	users int
}

func acquireTemplate(bins mariadbBinaries) (string, error) {
	template.mu.Lock()
	defer template.mu.Unlock()
	if template.dir == "" {
		dir, err := os.MkdirTemp("", "mytest-template-")
		if err != nil {
			return "", err
		}
		data := filepath.Join(dir, "data")
		args := append([]string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal", "--skip-test-db"}, serverOptions...)
		if os.Geteuid() == 0 {
			args = append(args, "--user=root")
		}
		ctx, cancel := context.WithTimeout(context.Background(), serverStartTimeout)
		defer cancel()
		out, err := osexecContext(ctx, bins.installDB, args...).CombinedOutput()
		if err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("%s: %v\n%s", bins.installDB, err, tailBytes(out, 2000))
		}
		template.dir = data
	}
	template.users++
	return template.dir, nil
}

// releaseTemplate is called when a server made from the template is gone;
// the last one removes it.
func releaseTemplate() {
	template.mu.Lock()
	defer template.mu.Unlock()
	template.users--
	if template.users == 0 && template.dir != "" {
		os.RemoveAll(filepath.Dir(template.dir))
		template.dir = ""
	}
}

// copyTree copies directory src to dst (which must not exist).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil // sockets, pid files: not part of the data
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o660)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func logTail(path string) string {
	b, _ := os.ReadFile(path)
	return tailBytes(b, 2000)
}

func tailBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// osexec and osexecContext are os/exec's Command: this package's exec
// runs a statement.
var (
	osexec        = execpkg.Command
	osexecContext = execpkg.CommandContext
)
