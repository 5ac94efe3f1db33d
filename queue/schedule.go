package queue

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule says when a periodic job's ticks fall.
type Schedule interface {
	// Next is the first tick strictly after t.
	Next(t time.Time) time.Time
}

// Every ticks at every multiple of the interval since Go's zero time
// (time.Time{}, the start of year 1, UTC), so that every node computes the
// same ticks: an interval that divides a day ticks at the same times each
// day from midnight UTC.
type Every time.Duration

// Next is the first multiple of the interval after t. An interval that is
// not positive never ticks: Next returns the zero time.
func (e Every) Next(t time.Time) time.Time {
	d := time.Duration(e)
	if d <= 0 {
		return time.Time{}
	}
	return t.Truncate(d).Add(d)
}

// Cron is a parsed five-field cron expression (minute hour day-of-month
// month day-of-week), evaluated in UTC. Fields take *, numbers, ranges
// (1-5), lists (1,15) and steps (*/10, 0-30/5); day-of-week 0 and 7 are
// Sunday. As in cron, when both day fields are restricted a day matching
// either runs.
type Cron struct {
	expr                     string
	min, hour, dom, mon, dow uint64
	domAny, dowAny           bool
}

// ParseCron parses a five-field cron expression.
func ParseCron(expr string) (*Cron, error) {
	f := strings.Fields(expr)
	if len(f) != 5 {
		return nil, fmt.Errorf("cron %q: want 5 fields (minute hour day-of-month month day-of-week), got %d", expr, len(f))
	}
	c := &Cron{expr: expr, domAny: f[2] == "*", dowAny: f[4] == "*"}
	var err error
	for i, spec := range []struct {
		dst      *uint64
		min, max int
		name     string
	}{{&c.min, 0, 59, "minute"}, {&c.hour, 0, 23, "hour"}, {&c.dom, 1, 31, "day of month"}, {&c.mon, 1, 12, "month"}, {&c.dow, 0, 7, "day of week"}} {
		if *spec.dst, err = cronField(f[i], spec.min, spec.max); err != nil {
			return nil, fmt.Errorf("cron %q: %s: %w", expr, spec.name, err)
		}
	}
	if c.dow&(1<<7) != 0 {
		c.dow |= 1 // 7 is Sunday too
	}
	return c, nil
}

func cronField(s string, lo, hi int) (uint64, error) {
	var bits uint64
	for _, part := range strings.Split(s, ",") {
		rng, stepStr, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepStr)
			if err != nil || n < 1 {
				return 0, fmt.Errorf("bad step %q", stepStr)
			}
			step = n
		}
		from, to := lo, hi
		if rng != "*" {
			a, b, isRange := strings.Cut(rng, "-")
			x, err := strconv.Atoi(a)
			if err != nil {
				return 0, fmt.Errorf("bad value %q", a)
			}
			from, to = x, x
			if isRange {
				if to, err = strconv.Atoi(b); err != nil {
					return 0, fmt.Errorf("bad value %q", b)
				}
			} else if hasStep {
				to = hi
			}
		}
		if from < lo || to > hi || from > to {
			return 0, fmt.Errorf("%q is outside %d-%d", part, lo, hi)
		}
		for v := from; v <= to; v += step {
			bits |= 1 << v
		}
	}
	return bits, nil
}

// String is the expression as given.
func (c *Cron) String() string { return c.expr }

// Next is the first minute after t (in UTC) the expression matches.
func (c *Cron) Next(t time.Time) time.Time {
	t = t.UTC().Truncate(time.Minute).Add(time.Minute)
	for limit := t.AddDate(5, 0, 0); t.Before(limit); {
		switch {
		case c.mon&(1<<uint(t.Month())) == 0:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
		case c.hour&(1<<uint(t.Hour())) == 0:
			t = t.Truncate(time.Hour).Add(time.Hour)
		case c.min&(1<<uint(t.Minute())) == 0:
			t = t.Add(time.Minute)
		default:
			return t
		}
	}
	return time.Time{} // never (e.g. 30 February)
}

func (c *Cron) dayMatches(t time.Time) bool {
	dom := c.dom&(1<<uint(t.Day())) != 0
	dow := c.dow&(1<<uint(t.Weekday())) != 0
	switch {
	case c.domAny && c.dowAny:
		return true
	case c.domAny:
		return dow
	case c.dowAny:
		return dom
	}
	return dom || dow
}

// MustParseCron is ParseCron for expressions checked already (generated
// code: queuegen validates the spec's cron expressions).
func MustParseCron(expr string) *Cron {
	c, err := ParseCron(expr)
	if err != nil {
		panic(err)
	}
	return c
}
