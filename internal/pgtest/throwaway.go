package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// serverBinDirsGlob matches the directories searched for initdb and pg_ctl
// when they are not on PATH.
var serverBinDirsGlob = "/usr/lib/postgresql/*/bin"

// tempCluster is a throwaway PostgreSQL cluster started by this process.
type tempCluster struct {
	dir   string // temporary directory holding data, socket and log
	data  string // data directory
	pgCtl string
	cred  *syscall.Credential // nil unless run as another user
	url   string
	opts  string // the server options it was started with
}

// startCluster creates and starts a throwaway cluster. It must be called with
// mu held.
func startCluster() (*tempCluster, error) {
	initdb, pgCtl, err := findServerBinaries()
	if err != nil {
		return nil, err
	}

	var cred *syscall.Credential
	var owner string
	if os.Geteuid() == 0 {
		cred, owner, err = unprivilegedCredential()
		if err != nil {
			return nil, err
		}
	}

	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("create temporary directory: %w", err)
	}
	c := &tempCluster{
		dir:   dir,
		data:  filepath.Join(dir, "data"),
		pgCtl: pgCtl,
		cred:  cred,
	}
	ok := false
	defer func() {
		if !ok {
			_ = c.stop()
		}
	}()

	if strings.ContainsAny(dir, `'"\`) {
		return nil, fmt.Errorf("temporary directory %q contains quotes", dir)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("chown %s to %s: %w", dir, owner, err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterStartTimeout)
	defer cancel()

	if out, err := c.run(ctx, initdb,
		"-D", c.data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C",
	); err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", initdb, err, out)
	}

	// The free port may be taken by someone else before the server binds
	// it, so try a few ports.
	logFile := filepath.Join(dir, "postgres.log")
	var startErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		opts := fmt.Sprintf("-p %d -k '%s' -c listen_addresses=127.0.0.1 -c fsync=off", port, dir)
		out, err := c.run(ctx, pgCtl,
			"-D", c.data, "-l", logFile, "-w", "-t", strconv.Itoa(int(clusterStartTimeout/time.Second)),
			"-o", opts, "start")
		if err != nil {
			log, _ := os.ReadFile(logFile)
			startErr = fmt.Errorf("%s start: %v\n%s\n%s", pgCtl, err, out, tail(log, 2000))
			continue
		}
		c.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
		c.opts = opts
		if err := waitReady(ctx, c.url); err != nil {
			return nil, fmt.Errorf("throwaway cluster on port %d not ready: %w", port, err)
		}
		ok = true
		return c, nil
	}
	return nil, startErr
}

// stop stops the cluster (if running) and removes its directory.
func (c *tempCluster) stop() error {
	var errs []error
	if _, err := os.Stat(filepath.Join(c.data, "postmaster.pid")); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := c.run(ctx, c.pgCtl, "-D", c.data, "-m", "immediate", "-w", "stop")
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s stop: %v\n%s", c.pgCtl, err, out))
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// run runs a PostgreSQL program as the cluster's user and returns its
// combined output.
func (c *tempCluster) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	// pg_ctl leaves the server running in the background; its output goes to
	// the log file, but do not wait forever should it hold our pipe.
	cmd.WaitDelay = 5 * time.Second
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	err := cmd.Run()
	return out.Bytes(), err
}

func waitReady(ctx context.Context, u string) error {
	var err error
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = probe(pctx, u)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// findServerBinaries locates initdb and pg_ctl: on PATH first, then in the
// highest-versioned /usr/lib/postgresql/*/bin.
func findServerBinaries() (initdb, pgCtl string, err error) {
	initdb, err1 := exec.LookPath("initdb")
	pgCtl, err2 := exec.LookPath("pg_ctl")
	if err1 == nil && err2 == nil {
		return initdb, pgCtl, nil
	}

	dirs, _ := filepath.Glob(serverBinDirsGlob)
	sort.Slice(dirs, func(i, j int) bool {
		return versionLess(versionOf(dirs[j]), versionOf(dirs[i]))
	})
	for _, d := range dirs {
		initdb, pgCtl = filepath.Join(d, "initdb"), filepath.Join(d, "pg_ctl")
		if isExecutable(initdb) && isExecutable(pgCtl) {
			return initdb, pgCtl, nil
		}
	}
	return "", "", fmt.Errorf("PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or in %s", serverBinDirsGlob)
}

// versionOf extracts the numeric components of the version directory in
// /usr/lib/postgresql/<version>/bin.
func versionOf(binDir string) []int {
	var v []int
	for _, part := range strings.Split(filepath.Base(filepath.Dir(binDir)), ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return v
		}
		v = append(v, n)
	}
	return v
}

func versionLess(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// unprivilegedCredential returns the credential of user postgres, else
// nobody, for running initdb and pg_ctl when the process runs as root.
func unprivilegedCredential() (*syscall.Credential, string, error) {
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			errs = append(errs, fmt.Errorf("user %s: bad uid/gid %q/%q", name, u.Uid, u.Gid))
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, name, nil
	}
	return nil, "", fmt.Errorf("running as root and no unprivileged user to run initdb as: %w", errors.Join(errs...))
}
