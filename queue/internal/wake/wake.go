// Package wake lets a push wake the idle workers of its queue that run in
// the same process, at once, whatever the database: generated accessors
// call Pushed after a push, and workers Subscribe while they run.
package wake

import "sync"

var (
	mu   sync.Mutex
	subs = map[string]map[chan<- struct{}]bool{}
)

// Subscribe makes every push to queue do a non-blocking send on ch, until
// the returned function is called.
func Subscribe(queue string, ch chan<- struct{}) (unsubscribe func()) {
	mu.Lock()
	defer mu.Unlock()
	if subs[queue] == nil {
		subs[queue] = map[chan<- struct{}]bool{}
	}
	subs[queue][ch] = true
	return func() {
		mu.Lock()
		defer mu.Unlock()
		delete(subs[queue], ch)
	}
}

// Pushed wakes the subscribers of queue.
func Pushed(queue string) {
	mu.Lock()
	defer mu.Unlock()
	for ch := range subs[queue] {
		select {
		case ch <- struct{}{}:
		default: // already due to wake
		}
	}
}
