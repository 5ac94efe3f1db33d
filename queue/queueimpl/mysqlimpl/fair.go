package mysqlimpl

import "context"

// FairValues is how many fair_by values one ClaimKeys statement takes jobs
// from: a branch of its UNION ALL a value, each a range read of the fair
// index (MySQL 8.0.14 has LATERAL, MariaDB none, so a value's jobs cannot
// be read from a derived table of values, and inside a dependent subquery
// MariaDB cannot seek from the job before). It is also what a claim
// divides its batch by for the quantum, the most jobs it takes from one
// value before it goes on to the next: a claim of many jobs takes them
// from FairValues values, one ClaimKeys statement, rather than one job of
// as many values as it has jobs.
const FairValues = 32

// FairClaim takes up to n due jobs for a fair claim, from one fair_by
// value after another, and returns them ranked: every value's first job,
// then every value's second, and so on, the values in the order the claim
// walked them.
//
// The walk starts after the value at which the accessor's previous claim
// stopped (after; nil before its first), goes on to the last value, then
// wraps around to the first and on to after itself: so that claims of a
// few jobs each take the values in turn rather than the first ones every
// time. list(ctx, from, through, limit) returns up to limit values with
// available jobs, in order, after from (nil: from the first) and up to
// through (nil: to the last). take(ctx, keys, limits) takes, in the
// claim's transaction, up to limits[i] of keys[i]'s due jobs in claim
// order, locked as they are read (a job another transaction holds is
// passed over), and returns them each with pos(row), 1 + the index of its
// value in keys; at most FairValues keys a call.
//
// When the first listing holds every value with available jobs (fewer
// than the batch needs at a quantum each), one take asks each value for
// its share, ⌈n ÷ values⌉ at most. Otherwise it takes up to a quantum (n ÷
// FairValues, rounded up) from each value, as many values as the batch
// needs; if it then visited every value before the batch was full, it
// takes more, once, from each value that gave all it was asked for, an
// equal part of what the batch lacks, re-reading the jobs it holds already
// (the first of the value's due jobs that no other transaction holds) and
// keeping those it did not hold (id). Either way no value gives more than
// about its share of the claim, and a value with fewer due jobs leaves the
// claim that much short. It asks take for no more
// jobs than the batch lacks, so it locks only jobs it returns: a
// transaction-mode claim, which keeps its locks while the handlers work,
// never holds more.
func FairClaim[K, R any](ctx context.Context, n int, after *K,
	list func(ctx context.Context, from, through *K, limit int) ([]K, error),
	take func(ctx context.Context, keys []K, limits []int) ([]R, error),
	pos func(R) int, id func(R) int64) ([]R, error) {
	if n <= 0 {
		return nil, nil
	}
	var (
		keys  []K   // the values walked, in order
		asked []int // how many jobs each value was asked for in all
		taken [][]R // each value's jobs, in claim order
		total int
	)
	// gather takes up to limits[i] jobs of the value at walk[i] (an index
	// of keys) and keeps those it did not hold already, no more than the
	// value was asked for in all (a job another transaction held before
	// and released since may come first in the re-read).
	gather := func(walk []int, limits []int) error {
		values, held := make([]K, len(walk)), map[int64]bool{}
		for i, v := range walk {
			values[i] = keys[v]
			for _, r := range taken[v] {
				held[id(r)] = true
			}
		}
		got, err := take(ctx, values, limits)
		if err != nil {
			return err
		}
		for _, r := range got {
			if v := walk[pos(r)-1]; !held[id(r)] && len(taken[v]) < asked[v] {
				taken[v] = append(taken[v], r)
				total++
			}
		}
		return nil
	}

	quantum := (n + FairValues - 1) / FairValues
	from, through, wrapped := after, (*K)(nil), after == nil
	whole := false // the first take asked every value for its whole share
	for total < n {
		want := min(FairValues, (n-total+quantum-1)/quantum)
		found, err := list(ctx, from, through, want)
		if err != nil {
			return nil, err
		}
		if len(found) < want && !wrapped {
			// Past the last value: on from the first, up to the one the
			// previous claim stopped at.
			wrapped, through = true, after
			more, err := list(ctx, nil, through, want-len(found))
			if err != nil {
				return nil, err
			}
			found = append(found, more...)
		}
		if len(found) == 0 {
			break
		}
		last := found[len(found)-1]
		from = &last
		limits := make([]int, len(found))
		left := n - total
		if whole = len(keys) == 0 && len(found) < want; whole {
			// Every value is listed, and one take reads them all: each
			// gives its share at once, ⌊n ÷ values⌋ or one more (the
			// first values in the walk's order take the rounding's extra
			// jobs).
			for i := range limits {
				limits[i] = left / len(found)
				if i < left%len(found) {
					limits[i]++
				}
			}
		} else {
			for i := range limits {
				limits[i] = min(quantum, left)
				left -= limits[i]
			}
		}
		walk := make([]int, len(found))
		for i := range walk {
			walk[i] = len(keys) + i
		}
		keys, asked = append(keys, found...), append(asked, limits...)
		taken = append(taken, make([][]R, len(found))...)
		if err := gather(walk, limits); err != nil {
			return nil, err
		}
		if len(found) < want {
			break // every value walked
		}
	}

	// The walk visited every value before the batch was full: more from
	// each value that gave all it was asked for, an equal part of what the
	// batch lacks (once: a value gives no more than its share of a claim,
	// so a claim may come back short).
	if total < n && !whole {
		var spare []int
		for v := range keys {
			if len(taken[v]) == asked[v] {
				spare = append(spare, v)
			}
		}
		each, left := 0, n-total
		if len(spare) > 0 {
			each = (left + len(spare) - 1) / len(spare)
		}
		for len(spare) > 0 && left > 0 {
			part := spare[:min(len(spare), FairValues)]
			spare = spare[len(part):]
			limits := make([]int, len(part))
			for i, v := range part {
				if extra := min(each, left); extra > 0 {
					left -= extra
					asked[v] = len(taken[v]) + extra
					limits[i] = asked[v]
				}
			}
			if err := gather(part, limits); err != nil {
				return nil, err
			}
		}
	}

	out := make([]R, 0, total)
	for turn := 0; len(out) < total; turn++ {
		for v := range taken {
			if turn < len(taken[v]) {
				out = append(out, taken[v][turn])
			}
		}
	}
	return out, nil
}
