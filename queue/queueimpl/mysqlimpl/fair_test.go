package mysqlimpl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fairTable is a queue table as FairClaim sees it through its list and
// take: each value's due jobs in claim order, the jobs other transactions
// hold (passed over), and the jobs this claim's transaction has locked.
type fairTable struct {
	jobs   map[string][]int64
	next   int64
	others map[int64]bool
	locked map[int64]bool
	takes  int
}

type fairRow struct {
	key string
	id  int64
	pos int
}

func newFairTable() *fairTable {
	return &fairTable{jobs: map[string][]int64{}, others: map[int64]bool{}, locked: map[int64]bool{}}
}

func (t *fairTable) push(key string, n int) {
	for range n {
		t.next++
		t.jobs[key] = append(t.jobs[key], t.next)
	}
}

// claim runs FairClaim from after as a claim's transaction that commits:
// the jobs it returns leave the table. A job returned twice panics.
func (t *fairTable) claim(after *string, n int) []fairRow {
	t.locked = map[int64]bool{}
	list := func(_ context.Context, from, through *string, limit int) ([]string, error) {
		var keys []string
		for k, js := range t.jobs {
			if len(js) > 0 && (from == nil || k > *from) && (through == nil || k <= *through) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		return keys[:min(len(keys), limit)], nil
	}
	take := func(_ context.Context, keys []string, limits []int) ([]fairRow, error) {
		t.takes++
		if len(keys) > FairValues {
			return nil, fmt.Errorf("take of %d values, more than FairValues", len(keys))
		}
		var out []fairRow
		for i, k := range keys {
			got := 0
			for _, id := range t.jobs[k] {
				if got == limits[i] {
					break
				}
				if t.others[id] {
					continue
				}
				t.locked[id] = true
				out = append(out, fairRow{k, id, i + 1})
				got++
			}
		}
		return out, nil
	}
	rows, err := FairClaim(context.Background(), n, after, list, take,
		func(r fairRow) int { return r.pos }, func(r fairRow) int64 { return r.id })
	if err != nil {
		panic(err)
	}
	seen := map[int64]bool{}
	for _, r := range rows {
		if seen[r.id] {
			panic(fmt.Sprintf("job %s/%d returned twice by a claim of %d", r.key, r.id, n))
		}
		seen[r.id] = true
	}
	for _, r := range rows {
		t.jobs[r.key] = slices.DeleteFunc(t.jobs[r.key], func(id int64) bool { return id == r.id })
	}
	return rows
}

func keysOf(rows []fairRow) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(r.key)
	}
	return b.String()
}

// TestFairClaimRotates: each claim starts after the value at which the
// previous one stopped (the value of its last job), wrapping around to
// the first, so claims of one take the values in turn whatever their
// jobs' order, and a claim of more than one turn gives its extra jobs to
// the values after those of the claim before. Fails if the walk does not
// wrap around, or starts at the value the last claim stopped at.
func TestFairClaimRotates(t *testing.T) {
	tb := newFairTable()
	for _, k := range []string{"c", "b", "a"} {
		tb.push(k, 10)
	}
	var after *string
	claims := func(n, times int) string {
		var got []string
		for range times {
			rows := tb.claim(after, n)
			if len(rows) > 0 {
				last := rows[len(rows)-1].key
				after = &last
			}
			got = append(got, keysOf(rows))
		}
		return strings.Join(got, " ")
	}
	if got, want := claims(1, 7), "a b c a b c a"; got != want {
		t.Errorf("claims of one took %s, want %s", got, want)
	}
	if got, want := claims(4, 3), "bcab cabc abca"; got != want {
		t.Errorf("claims of four took %s, want %s", got, want)
	}
}

// TestFairClaimTakesAQuantumOfEach: a claim of 500 from 100 values of 20
// jobs takes 16 (500 ÷ 32, rounded up) from each of the first 31 and the
// last 4 from the 32nd, in one take, ranked turn by turn; its last job is
// the 31st value's sixteenth. Fails if the claim takes one job of as many
// values as it has jobs, or more than it returns.
func TestFairClaimTakesAQuantumOfEach(t *testing.T) {
	tb := newFairTable()
	for i := range 100 {
		tb.push(fmt.Sprintf("t%03d", i), 20)
	}
	rows := tb.claim(nil, 500)
	count := map[string]int{}
	for _, r := range rows {
		count[r.key]++
	}
	want := map[string]int{"t031": 4}
	for i := range 31 {
		want[fmt.Sprintf("t%03d", i)] = 16
	}
	if diff := cmp.Diff(want, count); diff != "" {
		t.Errorf("a claim of 500 took (-want +got):\n%s", diff)
	}
	if tb.takes != 1 || len(tb.locked) != 500 {
		t.Errorf("%d takes locked %d jobs, want 1 take of 500", tb.takes, len(tb.locked))
	}
	if rows[0].key != "t000" || rows[1].key != "t001" || rows[32].key != "t000" {
		t.Errorf("the claim's jobs 1, 2 and 33 are of %s, %s and %s; want t000, t001 and t000: a turn of every value first", rows[0].key, rows[1].key, rows[32].key)
	}
	if last := rows[len(rows)-1].key; last != "t030" {
		t.Errorf("the claim's last job is of %s, want t030", last)
	}
}

// TestFairClaimOfFewValuesTakesWholeShares: when one listing holds every
// value, one take asks each for its share: with a's backlog first and two
// small values, a claim of 6 takes two of each, ranked a turn at a time;
// a claim of 10 then takes a's next ten in order, the other values having
// none. The claim locks no more jobs than it returns.
func TestFairClaimOfFewValuesTakesWholeShares(t *testing.T) {
	tb := newFairTable()
	tb.push("a", 50)
	tb.push("b", 2)
	tb.push("c", 2)
	rows := tb.claim(nil, 6)
	if got := keysOf(rows); got != "abcabc" || tb.takes != 1 {
		t.Errorf("a claim of 6 took %s in %d takes, want abcabc in 1", got, tb.takes)
	}
	if len(tb.locked) != 6 {
		t.Errorf("a claim of 6 locked %d jobs", len(tb.locked))
	}
	first := tb.jobs["a"][0]
	after := "c"
	rows = tb.claim(&after, 10)
	if len(rows) != 10 || len(tb.locked) != 10 {
		t.Fatalf("a claim of 10 took %d jobs and locked %d, want 10", len(rows), len(tb.locked))
	}
	for i, r := range rows {
		if r.key != "a" || r.id != first+int64(i) {
			t.Errorf("job %d of the claim of 10 is %s/%d, want a/%d", i, r.key, r.id, first+int64(i))
		}
	}
}

// TestFairClaimTakesMoreOnceEveryValueIsWalked: 35 values of one job and
// five of 1,000; a claim of 500 walks all 40 (two takes of a quantum of
// 16 each), 115 jobs, then takes more from the five that gave a whole
// quantum, an equal part (77) of the 385 the batch lacks, re-reading the
// 16 each holds already without taking them twice. Fails if the walk
// stops at the first 32 values, or the re-read counts a job twice or
// locks more than the batch.
func TestFairClaimTakesMoreOnceEveryValueIsWalked(t *testing.T) {
	tb := newFairTable()
	for i := range 40 {
		n := 1
		if i >= 35 {
			n = 1000
		}
		tb.push(fmt.Sprintf("t%02d", i), n)
	}
	rows := tb.claim(nil, 500)
	count := map[string]int{}
	seen := map[int64]bool{}
	for _, r := range rows {
		count[r.key]++
		if seen[r.id] {
			t.Errorf("job %d taken twice", r.id)
		}
		seen[r.id] = true
	}
	want := map[string]int{}
	for i := range 40 {
		want[fmt.Sprintf("t%02d", i)] = 1
		if i >= 35 {
			want[fmt.Sprintf("t%02d", i)] = 93
		}
	}
	if diff := cmp.Diff(want, count); diff != "" {
		t.Errorf("a claim of 500 took (-want +got):\n%s", diff)
	}
	if tb.takes != 3 || len(tb.locked) != 500 {
		t.Errorf("%d takes locked %d jobs, want 3 takes of 500 in all", tb.takes, len(tb.locked))
	}
}

// TestFairClaimPassesOverHeldJobs: jobs other transactions hold are
// passed over for the value's next ones, and a value with none left to
// give leaves its share of the batch untaken; the claim locks only what it
// returns.
func TestFairClaimPassesOverHeldJobs(t *testing.T) {
	tb := newFairTable()
	tb.push("a", 20)
	tb.push("b", 3)
	for _, id := range tb.jobs["a"][:5] {
		tb.others[id] = true
	}
	for _, id := range tb.jobs["b"] {
		tb.others[id] = true
	}
	want := slices.Clone(tb.jobs["a"][5:9])
	rows := tb.claim(nil, 8)
	if len(rows) != 4 || len(tb.locked) != 4 {
		t.Fatalf("took %d and locked %d, want a's share, 4", len(rows), len(tb.locked))
	}
	for i, r := range rows {
		if r.key != "a" || r.id != want[i] {
			t.Errorf("job %d is %s/%d, want a/%d: a's jobs after the 5 held, in order", i, r.key, r.id, want[i])
		}
	}
}
