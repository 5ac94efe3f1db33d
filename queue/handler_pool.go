package queue

import "sync"

// handlerPool runs a worker's handlers on goroutines it keeps, rather than
// on a new goroutine per job. A claimed batch is queued at once, and one
// goroutine is woken (or started) for it; each goroutine that takes a job
// while more wait wakes one more, unless a wake is already on its way. So
// when handlers return quickly, a few goroutines work through the whole
// batch, with no goroutine started or scheduled per job; when they block,
// the wake-ups chain until every queued job has a goroutine or the pool
// has max of them (the worker's concurrency): jobs claimed ahead wait in
// the queue until a goroutine is free.
type handlerPool[T any] struct {
	run  func(T)
	max  int // most goroutines
	live int // goroutines started

	mu     sync.Mutex
	queue  []T // FIFO from head; reset whenever it empties
	head   int
	idle   []chan struct{} // parked goroutines; a send wakes one
	waking bool            // a goroutine was woken or started and has not yet run
	closed bool
}

func newHandlerPool[T any](run func(T), max int) *handlerPool[T] {
	return &handlerPool[T]{run: run, max: max}
}

// add queues items, in order, and makes sure a goroutine is on its way.
func (p *handlerPool[T]) add(items ...T) {
	p.mu.Lock()
	p.queue = append(p.queue, items...)
	p.wakeLocked()
	p.mu.Unlock()
}

// wakeLocked wakes a parked goroutine, or starts one while there are
// fewer than max, if jobs wait and no wake is on its way already. It does
// so after close too: jobs queued just before the pool closed still fan
// out rather than wait for one another. With max goroutines busy, the
// queue waits for the first of them to finish its job.
func (p *handlerPool[T]) wakeLocked() {
	if p.waking || p.head == len(p.queue) {
		return
	}
	if n := len(p.idle); n > 0 {
		p.waking = true
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		c <- struct{}{}
		return
	}
	if p.live < p.max {
		p.waking = true
		p.live++
		go p.loop()
	}
}

// loop runs queued items until the pool is closed.
func (p *handlerPool[T]) loop() {
	wake := make(chan struct{}, 1)
	p.mu.Lock()
	for {
		p.waking = false
		for p.head < len(p.queue) {
			item := p.queue[p.head]
			var zero T
			p.queue[p.head] = zero
			p.head++
			if p.head == len(p.queue) {
				p.queue, p.head = p.queue[:0], 0
			}
			p.wakeLocked()
			p.mu.Unlock()
			p.run(item)
			p.mu.Lock()
		}
		if p.closed {
			p.live--
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, wake)
		p.mu.Unlock()
		<-wake
		p.mu.Lock()
	}
}

// close ends the parked goroutines, and the others once the queue is
// empty; it does not wait for handlers still running (a handler that
// ignores its cancelled context keeps its goroutine until it returns).
// Nothing may be added after close.
func (p *handlerPool[T]) close() {
	p.mu.Lock()
	p.closed = true
	for _, c := range p.idle {
		c <- struct{}{}
	}
	p.idle = nil
	p.mu.Unlock()
}
