package pgtest

import (
	"context"
	"path/filepath"
	"testing"
)

// Cluster is a private PostgreSQL cluster a test owns, for tests that must
// restart the server. It needs the server binaries (see URL's resolution,
// step 3).
type Cluster struct {
	c *tempCluster
}

// NewCluster starts a private cluster for t and stops it in t.Cleanup. It
// fails the test, saying how to install the server, when it cannot.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := startCluster()
	if err != nil {
		t.Fatalf("pgtest: cannot start a private PostgreSQL cluster (install the server: apt-get install -y postgresql): %v", err)
	}
	t.Cleanup(func() {
		if err := c.stop(); err != nil {
			t.Logf("pgtest: stopping the private cluster: %v", err)
		}
	})
	return &Cluster{c: c}
}

// URL is the cluster's admin URL (database postgres).
func (c *Cluster) URL() string { return c.c.url }

// Restart restarts the server with pg_ctl restart -m fast: every session
// is disconnected, as in a failover or a crash-free restart.
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterStartTimeout)
	defer cancel()
	if out, err := c.c.run(ctx, c.c.pgCtl, "-D", c.c.data, "-l", filepath.Join(c.c.dir, "postgres.log"), "-w", "-m", "fast", "restart"); err != nil {
		t.Fatalf("pgtest: pg_ctl restart: %v\n%s", err, out)
	}
	if err := waitReady(ctx, c.c.url); err != nil {
		t.Fatalf("pgtest: after restart: %v", err)
	}
}

// Crash stops the server as a crash would (pg_ctl stop -m immediate: every
// process ends at once, and WAL not yet written out of the server's memory
// is lost), then starts it again, which recovers from the WAL on disk.
func (c *Cluster) Crash(t testing.TB) {
	t.Helper()
	c.stop(t, "immediate")
	c.Start(t)
}

// Stop stops the server (pg_ctl stop -m fast): the database is unreachable
// until Start.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	c.stop(t, "fast")
}

// stop stops the server with pg_ctl stop in the given shutdown mode.
func (c *Cluster) stop(t testing.TB, mode string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterStartTimeout)
	defer cancel()
	if out, err := c.c.run(ctx, c.c.pgCtl, "-D", c.c.data, "-w", "-m", mode, "stop"); err != nil {
		t.Fatalf("pgtest: pg_ctl stop -m %s: %v\n%s", mode, err, out)
	}
}

// Start starts a stopped server and waits until it accepts connections.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterStartTimeout)
	defer cancel()
	if out, err := c.c.run(ctx, c.c.pgCtl, "-D", c.c.data, "-l", filepath.Join(c.c.dir, "postgres.log"), "-w", "-o", c.c.opts, "start"); err != nil {
		t.Fatalf("pgtest: pg_ctl start: %v\n%s", err, out)
	}
	if err := waitReady(ctx, c.c.url); err != nil {
		t.Fatalf("pgtest: after start: %v", err)
	}
}
