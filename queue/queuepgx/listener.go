// Package queuepgx is the part of queuegen's runtime that needs pgx/v5,
// which applications on PostgreSQL call: the Listener that wakes workers
// on the notifications of queues declared with notify: true.
//
// Pass a Listener to the workers with queue.WithListener. Generated code
// does not import this package (its pgx helpers are in
// queue/queueimpl/pgximpl), so an application links it only if it
// listens.
package queuepgx

import (
	"context"
	"errors"
	"fmt"
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
//
// It implements queue.Listener.
type Listener struct {
	connect func(ctx context.Context) (*pgx.Conn, error)
	logger  *slog.Logger

	mu      sync.Mutex
	subs    map[string]map[chan<- struct{}]bool
	restart context.CancelFunc // ends the current wait to LISTEN anew
	cancel  context.CancelFunc
	started bool
	done    chan struct{}

	probeTimeout time.Duration
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

// NewListenerURL returns a listener that connects to url itself: give it
// a direct URL to the database when the application's pool goes through
// a transaction-mode pooler such as PgBouncer, through which LISTEN cannot
// work (the pooler hands the server connection that listened to others).
func NewListenerURL(url string, logger *slog.Logger) *Listener {
	return NewListenerFunc(func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, url) }, logger)
}

// NewListenerFunc is NewListener with a function that opens the
// connection.
func NewListenerFunc(connect func(ctx context.Context) (*pgx.Conn, error), logger *slog.Logger) *Listener {
	if logger == nil {
		logger = slog.Default()
	}
	return &Listener{connect: connect, logger: logger, subs: map[string]map[chan<- struct{}]bool{}, done: make(chan struct{}),
		probeTimeout: 2 * time.Second}
}

// Subscribe makes a notification on channel do a non-blocking send on
// wake. It returns the function that unsubscribes.
// A nil *Listener subscribes nothing: the worker polls.
func (l *Listener) Subscribe(channel string, wake chan<- struct{}) (unsubscribe func()) {
	if l == nil {
		return func() {}
	}
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

// Close stops the listener and closes its connection (a nil *Listener:
// nothing).
func (l *Listener) Close() {
	if l == nil {
		return
	}
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
	backoff := minListenBackoff
	for ctx.Err() == nil {
		listened, err := l.session(ctx)
		if ctx.Err() != nil {
			return
		}
		backoff = nextListenBackoff(backoff, listened)
		if err == nil {
			continue // the channels changed; LISTEN anew at once
		}
		if errors.Is(err, errNoNotifications) {
			l.logger.Error("queue listener: "+err.Error()+"; workers poll meanwhile", "retry in", time.Minute)
			sleep(ctx, time.Minute)
			continue
		}
		l.logger.Warn("queue listener: connection lost; reconnecting", "err", err, "in", backoff)
		sleep(ctx, backoff)
	}
}

const (
	minListenBackoff = 100 * time.Millisecond
	maxListenBackoff = 5 * time.Second
)

// nextListenBackoff is the wait before the next reconnect: it doubles
// while sessions fail before listening, and starts over after a session
// that listened.
func nextListenBackoff(prev time.Duration, listened bool) time.Duration {
	if listened {
		return minListenBackoff
	}
	return min(2*prev, maxListenBackoff)
}

// errNoNotifications is a connection that LISTENs but is not notified.
var errNoNotifications = errors.New("its connection does not receive notifications (it goes through a transaction-mode pooler such as PgBouncer?): give the listener a direct connection, queuepgx.NewListenerURL(directURL, logger)")

// session connects, LISTENs, wakes everyone, and relays notifications
// until the connection fails or the channels change.
// It reports whether it got as far as listening.
func (l *Listener) session(ctx context.Context) (listened bool, err error) {
	conn, err := l.connect(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SET application_name = 'queuegen-listener'"); err != nil {
		return false, err
	}
	if err := l.probe(ctx, conn); err != nil {
		return false, err
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
				return listened, err
			}
		}
		listened = true
		l.wakeAll() // catch up on anything pushed while not listening
		for {
			n, err := conn.WaitForNotification(waitCtx)
			if err != nil {
				restart()
				if ctx.Err() == nil && waitCtx.Err() != nil {
					// The channels changed: pgx closes a connection whose
					// wait is cancelled, so start a new session.
					return listened, nil
				}
				return listened, err
			}
			l.wakeChannel(n.Channel)
		}
	}
}

// probe checks that the connection receives the notifications it listens
// for, sent from another connection: through a transaction-mode pooler,
// LISTEN succeeds but nothing ever arrives.
func (l *Listener) probe(ctx context.Context, conn *pgx.Conn) error {
	ch := fmt.Sprintf("queuegen_probe_%d_%d", conn.PgConn().PID(), time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
		return err
	}
	other, err := l.connect(ctx)
	if err != nil {
		return err
	}
	_, err = other.Exec(ctx, "SELECT pg_notify($1, '')", ch)
	other.Close(context.Background())
	if err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, l.probeTimeout)
	defer cancel()
	_, err = conn.WaitForNotification(waitCtx)
	if err != nil && ctx.Err() == nil && waitCtx.Err() != nil {
		return errNoNotifications
	}
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "UNLISTEN "+pgx.Identifier{ch}.Sanitize())
	return err
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

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
