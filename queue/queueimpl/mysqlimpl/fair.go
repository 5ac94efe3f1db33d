package mysqlimpl

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
)

// FairSeekShare and FairSeekValues bound the fair claims that seek each
// value's jobs, one statement a value (FairTake), rather than walk them in
// the one statement of the fair claim: at most FairSeekValues values with
// available jobs, each with a share of the claim (jobs a value) of at
// least FairSeekShare. MariaDB cannot seek from the job before inside that
// statement's recursive walk, so there a value's share of s reads s²/2
// index entries, and the walk recurses once a job (MariaDB stops a
// recursive CTE after max_recursive_iterations, 1,000 by default since
// 10.6, without an error: a claim of 2,500 from two values took 2,002);
// a seek reads s entries, at the cost of a round trip a value, and of the
// values' listing (FairKeys), a round trip a value too, which a claim that
// then falls back to the statement pays for nothing. Measured on MariaDB
// 10.11, a claim of 500: one value 3.3 ms seeking, 4.1 ms in the
// statement; two values 5.2 ms and 31 ms; 51 values (the statement) 6.1
// ms, 14.6 ms when the listing went on to 32 values first.
const (
	FairSeekShare  = 32
	FairSeekValues = 4
)

// FairSeeks reports whether a fair claim of n jobs from values (the
// fair_by values with available jobs) seeks each value's jobs (FairTake).
func FairSeeks(values, n int) bool {
	return values > 0 && values <= FairSeekValues && values*FairSeekShare <= n
}

// FairKeys lists the fair_by values with available jobs, first the least
// (first), then each next one after the one before (next), each one
// statement and one dive into the fair index, and stops when there are
// more than a claim of n jobs seeks (FairSeeks): the claim is then the one
// statement, which finds the values itself. No value is sql.ErrNoRows.
func FairKeys[K any](ctx context.Context, n int, first func(context.Context) (K, error), next func(context.Context, K) (K, error)) ([]K, error) {
	var keys []K
	key, err := first(ctx)
	for err == nil {
		keys = append(keys, key)
		if !FairSeeks(len(keys), n) {
			return keys, nil
		}
		key, err = next(ctx, key)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return keys, nil
	}
	return nil, err
}

// FairTake takes up to n jobs from values values (0 to values-1), each
// value's share in turn: take(ctx, v, k) takes and locks value v's first k
// due jobs in claim order, in the claim's transaction. The values are taken
// in an order drawn at random, each asked for its share, ⌊n ÷ values⌋ or
// one more (the rounding's extra jobs to the first values in that order,
// so that the shares add up to n), as the one statement's claim asks each
// for ⌈n ÷ values⌉ at most: a value with fewer due jobs leaves the batch
// that much short. It locks only the jobs it returns, at most n. The
// result is ranked as a fair claim's: every value's first job, then every
// value's second, and so on, values in the order drawn.
func FairTake[R any](ctx context.Context, values, n int, take func(ctx context.Context, value, k int) ([]R, error)) ([]R, error) {
	if values <= 0 || n <= 0 {
		return nil, nil
	}
	order := rand.Perm(values)
	if len(order) > n {
		order = order[:n]
	}
	each, extra := n/len(order), n%len(order)
	taken := make([][]R, len(order))
	total := 0
	for i, v := range order {
		k := each
		if i < extra {
			k++
		}
		got, err := take(ctx, v, k)
		if err != nil {
			return nil, err
		}
		taken[i] = got
		total += len(got)
	}
	out := make([]R, 0, total)
	for turn := 0; len(out) < total; turn++ {
		for _, got := range taken {
			if turn < len(got) {
				out = append(out, got[turn])
			}
		}
	}
	return out, nil
}
