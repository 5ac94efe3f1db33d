package queue

import (
	"context"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"sync"
	"time"
)

// NodeBeat is what a worker records of itself in queuegen's nodes table
// (queuegen_nodes), one row per node and queue, at start and every
// NodeHeartbeat: the dashboard's Nodes page and `queuegen nodes` read it.
type NodeBeat struct {
	// Node is the worker's node id, as in its leases (the Node option).
	Node string
	// Concurrency is how many handlers the worker runs at once.
	Concurrency int
	// Running is how many handlers were running at this beat.
	Running int
	// Host and PID name the process.
	Host string
	PID  int
	// StartedAt is when the worker's Run began.
	StartedAt time.Time
	// Every is the heartbeat interval: a reader takes a node whose last
	// beat is some intervals old for dead.
	Every time.Duration
}

// nodeRecorder is the accessor's BeatNode and ForgetNode, which accessors
// generated since the nodes table have; a worker of an older accessor
// records no node.
type nodeRecorder interface {
	// BeatNode upserts the node's row, with the database's clock as its
	// heartbeat.
	BeatNode(ctx context.Context, b NodeBeat) error
	// ForgetNode deletes the node's row, on a graceful stop.
	ForgetNode(ctx context.Context, node string) error
}

// defaultNodeHeartbeat is how often a worker records its node by default.
const defaultNodeHeartbeat = 5 * time.Second

// nodeBeater records a worker's node while it runs.
type nodeBeater struct {
	key     nodeKey
	rec     nodeRecorder
	beat    NodeBeat
	running func() int
	log     *slog.Logger
	stop    context.CancelFunc
	done    sync.WaitGroup
}

// nodeKey is a node's row: its id and queue, and the accessor that writes
// it (accessors of one queue on two databases write two rows).
type nodeKey struct {
	node, queue string
	accessor    any
}

// nodeRows are the workers of this process running now, by the row they
// record. Workers of one queue in one process share a node id unless
// given their own (the default, host and process id, names the process),
// and so share a row: when they are built from one accessor, each beat
// records the sums of their concurrency and running handlers, the
// earliest start and the longest interval (so that no reader takes the
// row for stale between beats), and only the last of them to stop deletes
// it. (Built from two accessors of one database, they write the row in
// turn, each its own facts, and the first to stop deletes it until the
// other's next beat.)
var nodeRows = struct {
	sync.Mutex
	m map[nodeKey][]*nodeBeater
}{m: map[nodeKey][]*nodeBeater{}}

// shared is b's beat with the sums over every worker recording b's row.
func (b *nodeBeater) shared() NodeBeat {
	nodeRows.Lock()
	defer nodeRows.Unlock()
	beat := b.beat
	beat.Concurrency, beat.Running = 0, 0
	for _, o := range nodeRows.m[b.key] {
		beat.Concurrency += o.beat.Concurrency
		beat.Running += o.running()
		if o.beat.StartedAt.Before(beat.StartedAt) {
			beat.StartedAt = o.beat.StartedAt
		}
		beat.Every = max(beat.Every, o.beat.Every)
	}
	return beat
}

// startNodeBeat records the worker's node (once before it returns, so
// the node's row exists before its first claim) and then every
// cfg.nodeHeartbeat, until stop. It returns nil when q records no nodes.
// A failed beat is logged and tried again at the next; it never stops the
// worker.
func startNodeBeat(ctx context.Context, q any, queue string, cfg workerConfig, running func() int, log *slog.Logger) *nodeBeater {
	rec, ok := q.(nodeRecorder)
	if !ok {
		return nil
	}
	host, _ := os.Hostname()
	// An accessor that cannot be compared (a struct value holding a
	// slice) shares with no other worker.
	var accessor any = rec
	if !reflect.TypeOf(rec).Comparable() {
		accessor = new(byte)
	}
	b := &nodeBeater{key: nodeKey{cfg.node, queue, accessor}, rec: rec, running: running, log: log, beat: NodeBeat{
		Node: cfg.node, Concurrency: cfg.concurrency, Host: host, PID: os.Getpid(),
		StartedAt: time.Now(), Every: cfg.nodeHeartbeat,
	}}
	nodeRows.Lock()
	nodeRows.m[b.key] = append(nodeRows.m[b.key], b)
	nodeRows.Unlock()
	ctx, b.stop = context.WithCancel(context.WithoutCancel(ctx))
	failing := !b.once(ctx, false)
	b.done.Go(func() {
		t := time.NewTicker(cfg.nodeHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				failing = !b.once(ctx, failing)
			}
		}
	})
	return b
}

// once beats, within the interval; it reports whether the beat was
// recorded. Only the first of a run of failures is logged as a warning.
func (b *nodeBeater) once(ctx context.Context, failing bool) bool {
	ctx, cancel := context.WithTimeout(ctx, max(b.beat.Every, time.Second))
	defer cancel()
	err := b.rec.BeatNode(ctx, b.shared())
	switch {
	case err == nil:
		if failing {
			b.log.Info("node heartbeat recorded again")
		}
		return true
	case ctx.Err() != nil && context.Cause(ctx) == context.Canceled:
		return !failing // stopping: not a failure
	case !failing:
		b.log.Warn("node heartbeat failed; retrying at the next", "err", err, "every", b.beat.Every)
	}
	return false
}

// end stops the heartbeat and, when the worker stopped gracefully (forget)
// and was the last of the process's workers recording its row, deletes the
// row; a worker that left jobs behind keeps its row, which goes stale, so
// that the jobs' node is seen to be gone (unless other workers of the row
// run on, whose beats keep it).
func (b *nodeBeater) end(ctx context.Context, forget bool) {
	if b == nil {
		return
	}
	b.stop()
	b.done.Wait()
	nodeRows.Lock()
	rest := slices.DeleteFunc(nodeRows.m[b.key], func(o *nodeBeater) bool { return o == b })
	if len(rest) == 0 {
		delete(nodeRows.m, b.key)
	} else {
		nodeRows.m[b.key] = rest
	}
	nodeRows.Unlock()
	if !forget || len(rest) > 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := b.rec.ForgetNode(ctx, b.beat.Node); err != nil {
		b.log.Warn("deleting the node's row failed; it goes stale instead", "err", err)
	}
}
