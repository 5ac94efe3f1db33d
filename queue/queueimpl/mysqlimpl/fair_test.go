package mysqlimpl

import (
	"context"
	"fmt"
	"testing"
)

// TestFairTake: the shares add up to the claim (⌊n ÷ values⌋, the
// rounding's extra to the first values drawn), a value with fewer jobs
// leaves the claim short, every value is asked once, and the result is
// ranked turn by turn: every value's first job, then every value's second.
func TestFairTake(t *testing.T) {
	have := []int{100, 100, 3} // jobs each value has
	asked := map[int]int{}
	got, err := FairTake(context.Background(), len(have), 20, func(_ context.Context, v, k int) ([]string, error) {
		asked[v] += k
		var jobs []string
		for i := range min(k, have[v]) {
			jobs = append(jobs, fmt.Sprint(v, "/", i))
		}
		return jobs, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for v, k := range asked {
		total += k
		if k != 6 && k != 7 {
			t.Errorf("value %d asked for %d, want 6 or 7", v, k)
		}
	}
	if total != 20 || len(asked) != 3 {
		t.Errorf("asked %v, want shares of 20 from each of 3 values", asked)
	}
	if len(got) != 20-(asked[2]-3) {
		t.Errorf("took %d jobs, want the shares less what value 2 lacked: %v", len(got), got)
	}
	// The first three are a turn: one job of each value, each its first.
	seen := map[byte]bool{}
	for _, j := range got[:3] {
		if j[2] != '0' || seen[j[0]] {
			t.Errorf("first turn %v is not each value's first job", got[:3])
		}
		seen[j[0]] = true
	}
	// More values than jobs: n values are drawn, one job each.
	calls := 0
	ones, _ := FairTake(context.Background(), 10, 3, func(_ context.Context, v, k int) ([]int, error) {
		calls++
		return []int{v}, nil
	})
	if calls != 3 || len(ones) != 3 {
		t.Errorf("claim of 3 from 10 values: %d statements, %v; want 3, one job each", calls, ones)
	}
}

// TestFairSeeks: a few values, each with a large share.
func TestFairSeeks(t *testing.T) {
	for _, c := range []struct {
		values, n int
		want      bool
	}{
		{0, 500, false}, {1, 500, true}, {1, 31, false}, {1, 32, true}, {4, 128, true}, {4, 127, false}, {5, 5000, false},
	} {
		if got := FairSeeks(c.values, c.n); got != c.want {
			t.Errorf("FairSeeks(%d, %d) = %v, want %v", c.values, c.n, got, c.want)
		}
	}
}
