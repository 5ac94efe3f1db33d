package queue

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is an exponential retry delay: Min × Factor^(n-1) after a job's
// nth failure (its snoozes, releases and lost leases do not count), capped
// at Max, then moved by up to ±Jitter (a fraction of the delay) so that jobs
// that failed together do not retry together.
type Backoff struct {
	// Min is the delay after the first failure.
	Min time.Duration
	// Max caps the delay.
	Max time.Duration
	// Factor multiplies the delay at each further failure.
	Factor float64
	// Jitter is the fraction of the delay it may move by either way.
	Jitter float64
}

// Delay is the wait before retrying after a job's nth failure (1 for the
// first).
func (b Backoff) Delay(n int32) time.Duration {
	if n < 1 {
		n = 1
	}
	d := float64(b.Min) * math.Pow(b.Factor, float64(n-1))
	if d > float64(b.Max) || math.IsInf(d, 0) || math.IsNaN(d) {
		d = float64(b.Max)
	}
	if b.Jitter > 0 {
		d += d * b.Jitter * (2*rand.Float64() - 1)
	}
	if d < 0 {
		d = 0
	}
	return time.Duration(d)
}
