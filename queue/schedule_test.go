package queue

import (
	"testing"
	"time"
)

func TestCronNext(t *testing.T) {
	at := func(s string) time.Time { v, _ := time.Parse("2006-01-02 15:04", s); return v }
	for _, c := range []struct{ expr, from, want string }{
		{"* * * * *", "2026-11-22 10:30", "2026-11-22 10:31"},
		{"0 3 * * *", "2026-11-22 10:30", "2026-11-23 03:00"},
		{"*/15 * * * *", "2026-11-22 10:30", "2026-11-22 10:45"},
		{"0 0 1 * *", "2026-11-22 10:30", "2026-12-01 00:00"},
		{"30 9 * * 1-5", "2026-11-21 10:00", "2026-11-23 09:30"}, // Saturday → Monday
		{"0 12 * * 0", "2026-11-22 13:00", "2026-11-29 12:00"},   // Sundays
		{"0 12 * * 7", "2026-11-22 13:00", "2026-11-29 12:00"},   // 7 is Sunday too
		{"0 0 29 2 *", "2026-03-01 00:00", "2028-02-29 00:00"},   // leap day
		{"5,10 0-1 * * *", "2026-11-22 00:07", "2026-11-22 00:10"},
	} {
		cron, err := ParseCron(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		if got := cron.Next(at(c.from)); !got.Equal(at(c.want)) {
			t.Errorf("%q after %s = %s, want %s", c.expr, c.from, got.Format("2006-01-02 15:04"), c.want)
		}
	}
	for _, bad := range []string{"* * * *", "60 * * * *", "* 24 * * *", "*/0 * * * *", "a * * * *", "5-1 * * * *"} {
		if _, err := ParseCron(bad); err == nil {
			t.Errorf("ParseCron(%q) accepted it", bad)
		}
	}
}

func TestEveryNext(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 31, 17, 0, time.UTC)
	if got := Every(15 * time.Minute).Next(at); !got.Equal(time.Date(2026, 11, 22, 10, 45, 0, 0, time.UTC)) {
		t.Errorf("Every(15m).Next = %v", got)
	}
	// Next must come strictly after t; an interval of zero or less has no
	// such tick, and a Scheduler that got t back would push in a loop.
	for _, d := range []time.Duration{0, -time.Second} {
		if got := Every(d).Next(at); !got.IsZero() {
			t.Errorf("Every(%v).Next = %v, want the zero time (never)", d, got)
		}
	}
}
