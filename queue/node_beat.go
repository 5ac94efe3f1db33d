package queue

import (
	"context"
	"log/slog"
	"os"
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
	rec     nodeRecorder
	beat    NodeBeat
	running func() int
	log     *slog.Logger
	stop    context.CancelFunc
	done    sync.WaitGroup
}

// startNodeBeat records the worker's node (once before it returns, so
// the node's row exists before its first claim) and then every
// cfg.nodeHeartbeat, until stop. It returns nil when q records no nodes.
// A failed beat is logged and tried again at the next; it never stops the
// worker.
func startNodeBeat(ctx context.Context, q any, cfg workerConfig, running func() int, log *slog.Logger) *nodeBeater {
	rec, ok := q.(nodeRecorder)
	if !ok {
		return nil
	}
	host, _ := os.Hostname()
	b := &nodeBeater{rec: rec, running: running, log: log, beat: NodeBeat{
		Node: cfg.node, Concurrency: cfg.concurrency, Host: host, PID: os.Getpid(),
		StartedAt: time.Now(), Every: cfg.nodeHeartbeat,
	}}
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
	beat := b.beat
	beat.Running = b.running()
	err := b.rec.BeatNode(ctx, beat)
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

// end stops the heartbeat and, when the worker stopped gracefully (forget),
// deletes the node's row; a worker that left jobs behind keeps its row,
// which goes stale, so that the jobs' node is seen to be gone.
func (b *nodeBeater) end(ctx context.Context, forget bool) {
	if b == nil {
		return
	}
	b.stop()
	b.done.Wait()
	if !forget {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := b.rec.ForgetNode(ctx, b.beat.Node); err != nil {
		b.log.Warn("deleting the node's row failed; it goes stale instead", "err", err)
	}
}
