package queue

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Listener holds one connection LISTENing for the notifications queues
// declared with notify: true send on push, and wakes the workers
// subscribed to them. One Listener serves every worker of a process.
//
// When its connection drops, it reconnects with backoff and then wakes
// every subscriber, so that a push notified while it was away is found by
// an immediate poll rather than waiting for the next one.
type Listener struct {
	connect func(ctx context.Context) (*pgx.Conn, error)
	logger  *slog.Logger

	mu      sync.Mutex
	subs    map[string]map[chan<- struct{}]bool
	restart context.CancelFunc // ends the current wait to LISTEN anew
	cancel  context.CancelFunc
	started bool
	done    chan struct{}
}

// NewListener returns a listener whose connection is taken from pool
// (and not given back while it listens). It starts with the first
// subscription; Close stops it.
func NewListener(pool *pgxpool.Pool, logger *slog.Logger) *Listener {
	return NewListenerFunc(func(ctx context.Context) (*pgx.Conn, error) {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		return c.Hijack(), nil
	}, logger)
}

// NewListenerFunc is NewListener with a function that opens the
// connection.
func NewListenerFunc(connect func(ctx context.Context) (*pgx.Conn, error), logger *slog.Logger) *Listener {
	if logger == nil {
		logger = slog.Default()
	}
	return &Listener{connect: connect, logger: logger, subs: map[string]map[chan<- struct{}]bool{}, done: make(chan struct{})}
}

// Subscribe makes a notification on channel do a non-blocking send on
// wake. It returns the function that unsubscribes.
func (l *Listener) Subscribe(channel string, wake chan<- struct{}) (unsubscribe func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs[channel] == nil {
		l.subs[channel] = map[chan<- struct{}]bool{}
		if l.restart != nil {
			l.restart() // LISTEN to the new channel too
		}
	}
	l.subs[channel][wake] = true
	if !l.started {
		l.started = true
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel = cancel
		go l.run(ctx)
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.subs[channel], wake)
	}
}

// Close stops the listener and closes its connection.
func (l *Listener) Close() {
	l.mu.Lock()
	cancel, started := l.cancel, l.started
	l.mu.Unlock()
	if started {
		cancel()
		<-l.done
	}
}

func (l *Listener) run(ctx context.Context) {
	defer close(l.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			continue // the channels changed; LISTEN anew at once
		}
		l.logger.Warn("queue listener: connection lost; reconnecting", "err", err, "in", backoff)
		sleep(ctx, backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
}

// session connects, LISTENs, wakes everyone, and relays notifications
// until the connection fails or the channels change.
func (l *Listener) session(ctx context.Context) error {
	conn, err := l.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SET application_name = 'queuegen-listener'"); err != nil {
		return err
	}
	for {
		waitCtx, restart := context.WithCancel(ctx)
		l.mu.Lock()
		channels := make([]string, 0, len(l.subs))
		for ch := range l.subs {
			channels = append(channels, ch)
		}
		l.restart = restart
		l.mu.Unlock()
		for _, ch := range channels {
			if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
				restart()
				return err
			}
		}
		l.wakeAll() // catch up on anything pushed while not listening
		for {
			n, err := conn.WaitForNotification(waitCtx)
			if err != nil {
				restart()
				if ctx.Err() == nil && waitCtx.Err() != nil {
					// The channels changed: pgx closes a connection whose
					// wait is cancelled, so start a new session.
					return nil
				}
				return err
			}
			l.wakeChannel(n.Channel)
		}
	}
}

func (l *Listener) wakeChannel(ch string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for wake := range l.subs[ch] {
		select {
		case wake <- struct{}{}:
		default: // already due to wake: notifications coalesce
		}
	}
}

func (l *Listener) wakeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, subs := range l.subs {
		for wake := range subs {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
}
