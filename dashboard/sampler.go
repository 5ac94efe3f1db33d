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

// perMinute counts, for each minute in which the sampler read table's
// counters twice or more, the rows inserted and deleted since the reading
// before: each difference of two consecutive readings counts in the
// minute of the later one (its rows were seen first then), so a minute's
// values are its true counts, give or take the rows of the few seconds
// between its first reading and the one before. at holds the minutes'
// starts, ascending; ok is false where the engine keeps no counters.
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
		if !oka || !okb || cb.Inserted < ca.Inserted || cb.Deleted < ca.Deleted {
			continue // a new table, or reset statistics
		}
		minute := b.at.UTC().Truncate(time.Minute)
		if n := len(at); n == 0 || !at[n-1].Equal(minute) {
			at, pushed, deleted = append(at, minute), append(pushed, 0), append(deleted, 0)
		}
		pushed[len(pushed)-1] += float64(cb.Inserted - ca.Inserted)
		deleted[len(deleted)-1] += float64(cb.Deleted - ca.Deleted)
	}
	return at, pushed, deleted, true
}
