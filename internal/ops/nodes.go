package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// StaleBeats is how many heartbeat intervals a node may miss before it is
// taken for dead (stale): its worker process has stopped beating without
// deleting its row, as a killed or frozen process does.
const StaleBeats = 3

// maxLeases bounds the leases a report lists (of nodes stale or unknown);
// Leases' total counts them all.
const maxLeases = 1000

// Node is one worker of one queue, from queuegen's nodes table: a worker
// process records its node at start and every heartbeat, and deletes the
// row when it stops gracefully.
type Node struct {
	Node  string `json:"node"`
	Queue string `json:"queue"`
	// Mode is the queue's mode (lease or transaction), from the registry.
	Mode        string `json:"mode"`
	Concurrency int    `json:"concurrency"`
	// Running is how many handlers the worker ran at its last heartbeat.
	Running int `json:"running"`
	// Held is how many of the queue's jobs are leased to the node now
	// (lease mode; a transaction-mode worker holds its jobs by row lock,
	// counted in Running).
	Held      int64     `json:"held"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
	// HeartbeatAt is the last heartbeat, by the database's clock.
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// Every is the node's heartbeat interval (heartbeat_ms in JSON).
	Every time.Duration `json:"-"`
	// HeartbeatMS is Every in milliseconds.
	HeartbeatMS int64 `json:"heartbeat_ms"`
	// Stale is true when the last heartbeat is more than StaleBeats
	// intervals old: the process is gone, or stuck.
	Stale bool `json:"stale"`
}

// StaleAfter is how old the node's last heartbeat may be before it is
// stale.
func (n Node) StaleAfter() time.Duration { return StaleBeats * n.Every }

// Lease is a job leased to a node that is stale or has no row in the
// nodes table: a node killed, or one whose runtime records no node (older
// than the nodes table) or that died before its first heartbeat. Its job
// is claimed again when the lease expires.
type Lease struct {
	Queue   string `json:"queue"`
	ID      int64  `json:"id"`
	Node    string `json:"node"`
	Attempt int32  `json:"attempt"`
	// LockedUntil is when the lease expires (or expired).
	LockedUntil time.Time `json:"locked_until"`
	// Expired is true when the lease has run out: the next claim takes
	// the job again (or, on its last attempt, the maintainer makes it
	// dead).
	Expired bool `json:"expired"`
	// Known is false when the node has no row for the queue at all.
	Known bool `json:"known_node"`
}

// NodeReport is the nodes of every queue and the leases of those that
// stopped heartbeating.
type NodeReport struct {
	// Now is the database's clock when the report was read.
	Now   time.Time `json:"now"`
	Nodes []Node    `json:"nodes"`
	// Leases are the jobs leased to nodes stale or unknown, by queue and
	// id, at most maxLeases of LeasesTotal.
	Leases      []Lease `json:"leases"`
	LeasesTotal int64   `json:"leases_total"`
}

// ErrNoNodesTable says the database has no nodes table: the migration
// that creates it (queuegen generate writes it) is not applied yet.
var ErrNoNodesTable = errors.New("no nodes table (queuegen_nodes): apply the migration that creates it (queuegen generate writes it; then queuegen migrate up)")

// nodeKey is a node of one queue.
type nodeKey struct{ node, queue string }

// Nodes reads the nodes table, counts each node's leases in its queue's
// table, and lists the leases held by nodes that are stale or have no row.
// Each read is plain (it locks nothing a worker waits on); the leases are
// found through each lease queue's lease index, so the reads cost as many
// rows as there are jobs in flight.
func (c *Conn) Nodes(ctx context.Context) (*NodeReport, error) {
	qs, err := c.Queues(ctx)
	if err != nil {
		return nil, err
	}
	r := &NodeReport{Nodes: []Node{}, Leases: []Lease{}}
	if r.Now, err = c.b.now(ctx); err != nil {
		return nil, err
	}
	if r.Nodes, err = c.b.nodes(ctx); err != nil {
		return nil, err
	}
	mode := map[string]string{}
	for _, q := range qs {
		mode[q.Name] = q.Mode
	}
	alive := map[nodeKey]bool{}
	index := map[nodeKey]int{}
	for i := range r.Nodes {
		n := &r.Nodes[i]
		n.Mode = mode[n.Queue]
		n.HeartbeatMS = n.Every.Milliseconds()
		n.Stale = r.Now.Sub(n.HeartbeatAt) > n.StaleAfter()
		k := nodeKey{n.Node, n.Queue}
		alive[k] = !n.Stale
		index[k] = i
	}
	for _, q := range qs {
		if q.Mode != "lease" {
			continue
		}
		held, err := c.b.leasesByNode(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("queue %s: %w", q.Name, err)
		}
		var gone []string
		for node, n := range held {
			k := nodeKey{node, q.Name}
			if i, ok := index[k]; ok {
				r.Nodes[i].Held = n
			}
			if !alive[k] {
				gone = append(gone, node)
				r.LeasesTotal += n
			}
		}
		if len(gone) == 0 || len(r.Leases) >= maxLeases {
			continue
		}
		slices.Sort(gone)
		ls, err := c.b.leasesOf(ctx, q, gone, maxLeases-len(r.Leases))
		if err != nil {
			return nil, fmt.Errorf("queue %s: %w", q.Name, err)
		}
		for _, l := range ls {
			_, l.Known = index[nodeKey{l.Node, q.Name}]
			l.Expired = l.LockedUntil.Before(r.Now)
			r.Leases = append(r.Leases, l)
		}
	}
	return r, nil
}

func (p *pgBackend) nodes(ctx context.Context) ([]Node, error) {
	rows, err := p.pool.Query(ctx, `SELECT node, queue, concurrency, running, host, pid, started_at, heartbeat_at, heartbeat_ms
FROM `+pgx.Identifier{p.schema, "queuegen_nodes"}.Sanitize()+`
ORDER BY node, queue`)
	if err == nil {
		var out []Node
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Node, error) {
			var n Node
			var ms int32
			err := r.Scan(&n.Node, &n.Queue, &n.Concurrency, &n.Running, &n.Host, &n.PID, &n.StartedAt, &n.HeartbeatAt, &ms)
			n.Every = time.Duration(ms) * time.Millisecond
			return n, err
		})
		if err == nil {
			return out, nil
		}
	}
	// A missing table fails the Query itself when the statement is
	// prepared on this connection first, and the rows when it was cached:
	// either way, it says which migration to apply.
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return nil, ErrNoNodesTable
	}
	return nil, err
}

// leasesByNode counts q's leased jobs by the node holding them, through
// the lease index (its predicate is state = 'running').
func (p *pgBackend) leasesByNode(ctx context.Context, q Queue) (map[string]int64, error) {
	rows, err := p.pool.Query(ctx, `SELECT locked_by, count(*) FROM `+p.table(q)+`
WHERE state = 'running' AND locked_until IS NOT NULL AND locked_by IS NOT NULL
GROUP BY locked_by`)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	var node string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&node, &n}, func() error { out[node] = n; return nil })
	return out, err
}

func (p *pgBackend) leasesOf(ctx context.Context, q Queue, nodes []string, limit int) ([]Lease, error) {
	rows, err := p.pool.Query(ctx, `SELECT id, locked_by, attempt, locked_until FROM `+p.table(q)+`
WHERE state = 'running' AND locked_until IS NOT NULL AND locked_by = ANY($1)
ORDER BY id
LIMIT $2`, nodes, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Lease, error) {
		l := Lease{Queue: q.Name}
		return l, r.Scan(&l.ID, &l.Node, &l.Attempt, &l.LockedUntil)
	})
}

func (m *myBackend) nodes(ctx context.Context) ([]Node, error) {
	rows, err := m.db.QueryContext(ctx, `SELECT node, queue, concurrency, running, host, pid, started_at, heartbeat_at, heartbeat_ms
FROM queuegen_nodes
ORDER BY node, queue`)
	if err != nil {
		if myErrno(err) == erNoSuchTable {
			return nil, ErrNoNodesTable
		}
		return nil, err
	}
	defer rows.Close()
	var out []Node
	for rows.Next() {
		var n Node
		var ms int32
		if err := rows.Scan(&n.Node, &n.Queue, &n.Concurrency, &n.Running, &n.Host, &n.PID, &n.StartedAt, &n.HeartbeatAt, &ms); err != nil {
			return nil, err
		}
		n.StartedAt, n.HeartbeatAt = n.StartedAt.UTC(), n.HeartbeatAt.UTC()
		n.Every = time.Duration(ms) * time.Millisecond
		out = append(out, n)
	}
	return out, rows.Err()
}

// leasesByNode counts q's leased jobs by the node holding them, through
// the lease index (state, locked_until).
func (m *myBackend) leasesByNode(ctx context.Context, q Queue) (map[string]int64, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	rows, err := m.db.QueryContext(ctx, `SELECT locked_by, COUNT(*) FROM `+t+`
WHERE state = 'running' AND locked_until IS NOT NULL AND locked_by IS NOT NULL
GROUP BY locked_by`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var node string
		var n int64
		if err := rows.Scan(&node, &n); err != nil {
			return nil, err
		}
		out[node] = n
	}
	return out, rows.Err()
}

func (m *myBackend) leasesOf(ctx context.Context, q Queue, nodes []string, limit int) ([]Lease, error) {
	t, err := m.table(q)
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, len(nodes)+1)
	for _, n := range nodes {
		args = append(args, n)
	}
	rows, err := m.db.QueryContext(ctx, `SELECT id, locked_by, attempt, locked_until FROM `+t+`
WHERE state = 'running' AND locked_until IS NOT NULL AND locked_by IN (`+placeholders(len(nodes))+`)
ORDER BY id
LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Lease
	for rows.Next() {
		l := Lease{Queue: q.Name}
		if err := rows.Scan(&l.ID, &l.Node, &l.Attempt, &l.LockedUntil); err != nil {
			return nil, err
		}
		l.LockedUntil = l.LockedUntil.UTC()
		out = append(out, l)
	}
	return out, rows.Err()
}
