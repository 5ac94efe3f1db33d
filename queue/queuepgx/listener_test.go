package queuepgx

import (
	"testing"
	"time"

	"github.com/queuegen/queuegen/queue"
)

func TestListenBackoff(t *testing.T) {
	b := minListenBackoff
	for range 10 {
		b = nextListenBackoff(b, false)
	}
	if b != maxListenBackoff {
		t.Errorf("after failures the backoff is %v, want the cap %v", b, maxListenBackoff)
	}
	if b = nextListenBackoff(b, true); b != minListenBackoff {
		t.Errorf("after a session that listened the backoff is %v, want it reset to %v", b, minListenBackoff)
	}
	if b = nextListenBackoff(b, false); b != 2*minListenBackoff {
		t.Errorf("then %v, want %v", b, 2*time.Duration(minListenBackoff))
	}
}

// TestNilListener: a nil *Listener given to queue.WithListener (an
// application that listens only when configured to) subscribes nothing,
// as a nil *queue.Listener did before the listener moved here, and the
// worker polls.
func TestNilListener(t *testing.T) {
	var l *Listener
	var q queue.Listener = l
	q.Subscribe("ch", make(chan struct{}, 1))()
	l.Close()
}
