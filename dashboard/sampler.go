package dashboard

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/queuegen/queuegen/internal/ops"
)

// sampler reads the server's per-table counters of rows inserted and
// deleted every so often and keeps an hour of readings, from which the
// throughput chart draws jobs pushed and deleted per minute. On an engine
// that keeps no such counters (MySQL) it stops at its first reading.
type sampler struct {
	conn  *ops.Conn
	every time.Duration
	done  chan struct{}
	wg    sync.WaitGroup

	mu       sync.Mutex
	readings []reading
	none     bool // the engine keeps no counters
}

// reading is the counters of every queue table at one time.
type reading struct {
	at     time.Time
	tables map[string]ops.Counters
}

// keep is how long readings are kept.
const keep = time.Hour

func newSampler(conn *ops.Conn, every time.Duration) *sampler {
	s := &sampler{conn: conn, every: every, done: make(chan struct{})}
	s.wg.Add(1)
	go s.run()
	return s
}

func (s *sampler) run() {
	defer s.wg.Done()
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		if !s.read() {
			return
		}
		select {
		case <-s.done:
			return
		case <-t.C:
		}
	}
}

// read takes one reading; false when the engine has no counters.
func (s *sampler) read() bool {
	ctx, cancel := context.WithTimeout(context.Background(), s.every)
	defer cancel()
	tables, err := s.conn.Counters(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(err, ops.ErrNoCounters) {
		s.none = true
		return false
	}
	if err != nil {
		return true // a failed reading leaves a gap
	}
	now := time.Now()
	s.readings = append(s.readings, reading{at: now, tables: tables})
	for len(s.readings) > 0 && now.Sub(s.readings[0].at) > keep+time.Minute {
		s.readings = s.readings[1:]
	}
	return true
}

func (s *sampler) stop() {
	close(s.done)
	s.wg.Wait()
}

// perMinute turns the readings of table into rates per minute, each at
// the time of the later of two consecutive readings; ok is false where
// the engine keeps no counters.
func (s *sampler) perMinute(table string) (at []time.Time, pushed, deleted []float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.none {
		return nil, nil, nil, false
	}
	for i := 1; i < len(s.readings); i++ {
		a, b := s.readings[i-1], s.readings[i]
		ca, oka := a.tables[table]
		cb, okb := b.tables[table]
		minutes := b.at.Sub(a.at).Minutes()
		if !oka || !okb || minutes <= 0 || cb.Inserted < ca.Inserted || cb.Deleted < ca.Deleted {
			continue // a new table, or reset statistics
		}
		at = append(at, b.at)
		pushed = append(pushed, float64(cb.Inserted-ca.Inserted)/minutes)
		deleted = append(deleted, float64(cb.Deleted-ca.Deleted)/minutes)
	}
	return at, pushed, deleted, true
}
