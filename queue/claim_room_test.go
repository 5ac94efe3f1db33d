package queue

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestClaimRoomHoldsAheadOnlyOfQuickHandlers: handlers much slower than
// a claim leave nothing held ahead (a claim takes the handlers free, as
// before); quick ones let the worker hold up to the cap ahead, and claims
// then wait for a full claim's room while jobs are still queued.
func TestClaimRoomHoldsAheadOnlyOfQuickHandlers(t *testing.T) {
	const concurrency, maxClaim, most = 100, 500, 1000
	slow := newClaimRoom(most)
	firstClaim(t, &slow, concurrency, maxClaim)
	// Before any handler returns, nothing is held ahead: a worker starting
	// beside others, or whose handlers run long, takes what its handlers run.
	slow.claimed(5 * time.Millisecond)
	if a := slow.ahead(concurrency); a != 0 {
		t.Fatalf("no handler returned yet: %d held ahead, want 0", a)
	}
	for range 50 {
		slow.finish(time.Second)
	}
	if a := slow.ahead(concurrency); a != 1 {
		t.Errorf("1 s handlers, 5 ms claims: %d held ahead, want 1 (100 × 2 × 5 ms ÷ 1 s)", a)
	}
	if n := slow.reserve(concurrency, maxClaim); n != 51 {
		t.Errorf("after 50 handlers returned the claim takes %d, want 51", n)
	}

	quick := newClaimRoom(most)
	quick.reserve(concurrency, maxClaim)
	for range concurrency {
		quick.finish(10 * time.Microsecond)
	}
	quick.claimed(5 * time.Millisecond)
	if a := quick.ahead(concurrency); a != most {
		t.Fatalf("10 µs handlers, 5 ms claims: %d held ahead, want the cap %d", a, most)
	}
	if a, b := quick.reserve(concurrency, maxClaim), quick.reserve(concurrency, maxClaim); a != maxClaim || b != maxClaim {
		t.Errorf("two claims take %d and %d, want %d each", a, b, maxClaim)
	}
	// 1000 held of 1100, more than the handlers run: a claim waits for a
	// full claim's room while jobs are queued.
	if n := quick.reserve(concurrency, maxClaim); n != 0 {
		t.Errorf("100 free of 1100 with jobs queued: the claim takes %d, want it to wait", n)
	}
	quick.release(399)
	if n := quick.reserve(concurrency, maxClaim); n != 0 {
		t.Errorf("499 free of 1100 with jobs queued: the claim takes %d, want it to wait", n)
	}
	quick.release(1)
	if n := quick.reserve(concurrency, maxClaim); n != maxClaim {
		t.Errorf("500 free: the claim takes %d, want %d", n, maxClaim)
	}
}

// TestClaimRoomCountsAHandlersReturnAtOnce: a worker's first claim
// takes what its handlers run, since their time is unknown; once one of
// them returns quickly, the next claim is sized for quick handlers at
// once, not only after another claim has come back. (Sizing the room only
// when a claim ends made a worker's second claim as small as the handlers
// freed, and put a claim's round trip into the waits of the jobs behind
// it.)
func TestClaimRoomCountsAHandlersReturnAtOnce(t *testing.T) {
	const concurrency, maxClaim, most = 100, 500, 1000
	r := newClaimRoom(most)
	firstClaim(t, &r, concurrency, maxClaim)
	r.claimed(5 * time.Millisecond)
	if n := r.reserve(concurrency, maxClaim); n != 0 {
		t.Fatalf("every handler busy, none returned: a second claim takes %d, want it to wait", n)
	}
	r.finish(10 * time.Microsecond)
	if n := r.reserve(concurrency, maxClaim); n != maxClaim {
		t.Errorf("one 10 µs handler returned after a 5 ms claim: the next claim takes %d, want %d", n, maxClaim)
	}
}

// A queue with limits records no claim: it holds nothing ahead, however
// quick its handlers.
func TestClaimRoomWithoutClaimsHoldsNothingAhead(t *testing.T) {
	const concurrency, maxClaim, most = 10, 500, 1000
	r := newClaimRoom(most)
	firstClaim(t, &r, concurrency, maxClaim)
	for range concurrency {
		r.finish(10 * time.Microsecond)
	}
	if n := r.reserve(concurrency, maxClaim); n != concurrency {
		t.Errorf("no claim recorded: the claim takes %d, want the %d handlers", n, concurrency)
	}
}

// firstClaim reserves a worker's first claim in r: it takes what the
// handlers run, their time still unknown.
func firstClaim(t *testing.T, r *claimRoom, concurrency, maxClaim int) {
	t.Helper()
	if n := r.reserve(concurrency, maxClaim); n != concurrency {
		t.Fatalf("first claim takes %d, want the %d handlers", n, concurrency)
	}
}

// TestHandlerPoolRunsAtMostMax: the pool never runs more than max items at
// once, however many are queued, and runs them all.
func TestHandlerPoolRunsAtMostMax(t *testing.T) {
	const max, items = 4, 200
	var running, peak, done atomic.Int64
	var wg sync.WaitGroup
	wg.Add(items)
	p := newHandlerPool(func(int) {
		n := running.Add(1)
		for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
		}
		time.Sleep(100 * time.Microsecond)
		running.Add(-1)
		done.Add(1)
		wg.Done()
	}, max)
	for i := range items {
		p.add(i)
	}
	wg.Wait()
	p.close()
	if done.Load() != items {
		t.Errorf("ran %d items, want %d", done.Load(), items)
	}
	if peak.Load() > max || peak.Load() < 2 {
		t.Errorf("peak %d running at once, want between 2 and %d", peak.Load(), max)
	}
}
