package queue

import (
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Min: time.Second, Max: time.Minute, Factor: 2}
	for attempt, want := range map[int32]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 7: time.Minute, 1000: time.Minute} {
		if got := b.Delay(attempt); got != want {
			t.Errorf("Delay(%d) = %v, want %v", attempt, got, want)
		}
	}
}

func TestBackoffJitterStaysInBounds(t *testing.T) {
	b := Backoff{Min: 10 * time.Second, Max: time.Hour, Factor: 2, Jitter: 0.25}
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := b.Delay(1)
		if d < 7500*time.Millisecond || d > 12500*time.Millisecond {
			t.Fatalf("Delay(1) = %v, outside 10s ± 25%%", d)
		}
		seen[d] = true
	}
	if len(seen) < 100 {
		t.Errorf("jitter produced only %d distinct delays in 1000", len(seen))
	}
}
