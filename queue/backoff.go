package queue

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is an exponential retry delay: Min × Factor^(attempt-1), capped
// at Max, then moved by up to ±Jitter (a fraction of the delay) so that jobs
// that failed together do not retry together.
type Backoff struct {
	Min    time.Duration
	Max    time.Duration
	Factor float64
	Jitter float64
}

// Delay is the wait before retrying after failed attempt number attempt
// (1 for the first attempt).
func (b Backoff) Delay(attempt int32) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := float64(b.Min) * math.Pow(b.Factor, float64(attempt-1))
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
