package ops

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// batch is one transaction of Apply, on its queue's table.
type batch interface {
	// lock locks those of ids that action still applies to, in id order,
	// passing over rows another transaction holds (SKIP LOCKED), and
	// returns them.
	lock(ctx context.Context, ids []int64, action Action) ([]candidate, error)
	// matching returns, ascending, those of ids that action applies to, by
	// a plain read (one that neither locks nor waits).
	matching(ctx context.Context, ids []int64, action Action) ([]int64, error)
	// holders returns, of each of keys, the newest unfinished job holding
	// it, leaving the jobs of ids out.
	holders(ctx context.Context, keys []string, ids []int64) (map[string]int64, error)
	// change does action to ids, rows lock returned, and returns those it
	// changed.
	change(ctx context.Context, action Action, ids []int64) ([]int64, error)
	commit(ctx context.Context) error
	rollback(ctx context.Context)
}

// candidate is a job a batch locked, with its unique key.
type candidate struct {
	id  int64
	key *string
}

// Count counts the jobs of q matching f that action applies to.
func (c *Conn) Count(ctx context.Context, q Queue, f Filter, action Action) (int64, error) {
	if err := c.check(ctx, q, f); err != nil {
		return 0, err
	}
	if _, ok := applicable[action]; !ok {
		return 0, fmt.Errorf("unknown action %q", action)
	}
	return c.b.count(ctx, q, f, action)
}

// Action is what retry, cancel and purge do to the jobs they select, of
// those it applies to (see AppliesTo).
type Action string

// The actions.
const (
	// Retry makes jobs available now, with at least one attempt left. It
	// applies to jobs that have failed and wait out their backoff
	// (retrying), and to finished ones (dead, succeeded): a job that is
	// due already, scheduled, or running has nothing to retry.
	Retry Action = "retry"
	// Cancel makes unfinished jobs dead, with the error "cancelled by an
	// operator". A running job's worker finds its attempt no longer held.
	Cancel Action = "cancel"
	// Purge deletes jobs.
	Purge Action = "purge"
)

// applicable are the jobs each action applies to, as a predicate on a
// queue table in either engine's SQL, and in words. A job a transaction
// holds is among those Cancel and Purge apply to, and Apply skips it
// (SKIP LOCKED) and reports it; Retry's jobs are never held by a worker
// (a worker holds due jobs).
var applicable = map[Action]struct{ pg, my, jobs string }{
	Retry: {"(state IN ('dead', 'succeeded') OR (state = 'available' AND run_after > now() AND cardinality(errors) > 0))",
		"(state IN ('dead', 'succeeded') OR (state = 'available' AND run_after > UTC_TIMESTAMP(6) AND JSON_LENGTH(errors) > 0))",
		"retrying, dead and succeeded jobs"},
	Cancel: {"state IN ('available', 'running')", "state IN ('available', 'running')",
		"unfinished jobs (available, scheduled, retrying, running and expired)"},
	Purge: {"state IN ('available', 'running', 'succeeded', 'dead')", "state IN ('available', 'running', 'succeeded', 'dead')",
		"jobs in every state"},
}

// appliesTo are the filter states each action can apply to some job of.
var appliesTo = map[Action][]string{
	Retry:  {"all", "retrying", "failed", "succeeded", "dead"},
	Cancel: {"all", "available", "scheduled", "retrying", "failed", "running", "expired"},
	Purge:  FilterStates,
}

// AppliesTo reports whether action can apply to any job that the filter
// state (all, available, scheduled, retrying, failed, running, expired,
// succeeded or dead) selects: retry never applies to running jobs, nor to available
// ones (due now: they run as soon as a worker is free), for instance. It
// reports true for a state it does not know, which the filter's own check
// then refuses, naming the states it knows.
func (a Action) AppliesTo(state string) bool {
	if _, known := predicates[state]; !known {
		return true
	}
	return slices.Contains(appliesTo[a], state)
}

// Applies says in words which jobs action applies to.
func (a Action) Applies() string { return applicable[a].jobs }

// AppliesToJob reports whether action applies to j, a job read at now:
// as Apply decides it, but on the clock given.
func (a Action) AppliesToJob(j Job, now time.Time) bool {
	switch a {
	case Retry:
		return slices.Contains([]string{"retrying", "succeeded", "dead"}, j.Phase(now))
	case Cancel:
		return !slices.Contains([]string{"succeeded", "dead"}, j.Phase(now))
	case Purge:
		return true
	}
	return false
}

// cancelled is the error Cancel records.
const cancelled = "cancelled by an operator"

// Result is what an action did.
type Result struct {
	// Changed are the ids of the jobs the action changed, ascending.
	Changed []int64 `json:"changed"`
	// Locked are jobs it matched but skipped: a transaction in progress
	// holds them (a transaction-mode worker working them, say). Run the
	// action again once it has ended.
	Locked []int64 `json:"locked"`
	// Conflicts are jobs retry could not make available: an unfinished
	// job holds their unique key.
	Conflicts []Conflict `json:"conflicts"`
}

// Conflict is a job whose unique key another unfinished job holds.
type Conflict struct {
	ID     int64  `json:"id"`
	Key    string `json:"unique_key"`
	Holder int64  `json:"held_by"`
}

// Skipped is how many matched jobs were not changed.
func (r *Result) Skipped() int { return len(r.Locked) + len(r.Conflicts) }

// BatchSize is how many jobs one transaction of an action changes: a large
// retry, cancel or purge runs as many short transactions, never one long
// one that would hold back vacuum (PostgreSQL) or purge (InnoDB), or lock
// many rows at once.
const BatchSize = 10000

// Apply does action to the jobs of q matching f, in batches of BatchSize,
// calling progress (when not nil) after each batch. It never waits on a
// job a transaction holds: such jobs are skipped and reported. Retry skips
// jobs whose unique key another unfinished job holds (and, of several
// retried jobs sharing a key, retries the newest), naming the holder.
//
// Each batch is a transaction that locks its jobs FOR UPDATE SKIP LOCKED
// (on MySQL at READ COMMITTED, so that it locks no gaps) and then changes
// them by id; one a deadlock rolled back runs again, up to three times.
func (c *Conn) Apply(ctx context.Context, q Queue, f Filter, action Action, progress func(done, total int)) (*Result, error) {
	if err := c.check(ctx, q, f); err != nil {
		return nil, err
	}
	if _, ok := applicable[action]; !ok {
		return nil, fmt.Errorf("unknown action %q", action)
	}
	all, err := c.b.matching(ctx, q, f, action)
	if err != nil {
		return nil, err
	}
	if f.ID != 0 && len(all) == 0 {
		return nil, c.noJob(ctx, q, f.ID, action)
	}
	res := &Result{Changed: []int64{}, Locked: []int64{}, Conflicts: []Conflict{}}
	done := 0
	for ids := range slices.Chunk(all, BatchSize) {
		if err := c.applyBatch(ctx, q, ids, action, res); err != nil {
			return res, err
		}
		done += len(ids)
		if progress != nil {
			progress(done, len(all))
		}
	}
	slices.Sort(res.Changed)
	slices.Sort(res.Locked)
	slices.SortFunc(res.Conflicts, func(a, b Conflict) int { return cmp.Compare(a.ID, b.ID) })
	return res, nil
}

// applyBatch does action to the jobs of ids that still qualify, in one
// short transaction, run again when a deadlock rolled it back; res gets
// what a committed transaction did.
func (c *Conn) applyBatch(ctx context.Context, q Queue, ids []int64, action Action, res *Result) error {
	for try := 1; ; try++ {
		part, err := c.tryBatch(ctx, q, ids, action)
		if err != nil {
			if try < 3 && c.b.retryable(err) {
				continue
			}
			return err
		}
		res.Changed = append(res.Changed, part.Changed...)
		res.Locked = append(res.Locked, part.Locked...)
		res.Conflicts = append(res.Conflicts, part.Conflicts...)
		return nil
	}
}

func (c *Conn) tryBatch(ctx context.Context, q Queue, ids []int64, action Action) (*Result, error) {
	tx, err := c.b.begin(ctx, q)
	if err != nil {
		return nil, err
	}
	defer tx.rollback(context.WithoutCancel(ctx))
	part := &Result{}
	cands, err := tx.lock(ctx, ids, action)
	if err != nil {
		return nil, err
	}
	lockable := map[int64]bool{}
	for _, c := range cands {
		lockable[c.id] = true
	}
	var missing []int64
	for _, id := range ids {
		if !lockable[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		// Those that still qualify are held by a transaction; the others
		// changed meanwhile (a worker finished them) and are left alone.
		locked, err := tx.matching(ctx, missing, action)
		if err != nil {
			return nil, err
		}
		part.Locked = locked
	}
	chosen := make([]int64, 0, len(cands))
	if action == Retry {
		// A retried job becomes unfinished again, so it must not take a
		// unique key another unfinished job holds, nor one another job of
		// this retry takes: keep the newest of each key.
		byKey := map[string][]int64{}
		var keys []string
		for _, c := range cands {
			if c.key == nil {
				chosen = append(chosen, c.id)
				continue
			}
			if byKey[*c.key] == nil {
				keys = append(keys, *c.key)
			}
			byKey[*c.key] = append(byKey[*c.key], c.id)
		}
		holders := map[string]int64{}
		if len(keys) > 0 {
			if holders, err = tx.holders(ctx, keys, ids); err != nil {
				return nil, err
			}
		}
		for _, k := range keys {
			group := byKey[k] // ascending
			holder, held := holders[k]
			if !held {
				holder = group[len(group)-1]
				chosen = append(chosen, holder)
				group = group[:len(group)-1]
			}
			for _, id := range group {
				part.Conflicts = append(part.Conflicts, Conflict{ID: id, Key: k, Holder: holder})
			}
		}
	} else {
		for _, c := range cands {
			chosen = append(chosen, c.id)
		}
	}
	if len(chosen) > 0 {
		if part.Changed, err = tx.change(ctx, action, chosen); err != nil {
			return nil, err
		}
	}
	if err := tx.commit(ctx); err != nil {
		return nil, err
	}
	return part, nil
}

// noJob explains why the job with id matched nothing: there is none, or
// action does not apply to it, in the state the jobs command shows.
func (c *Conn) noJob(ctx context.Context, q Queue, id int64, action Action) error {
	j, err := c.GetJob(ctx, q, id)
	if err != nil {
		return err
	}
	now, err := c.b.now(ctx)
	if err != nil {
		return err
	}
	phase := j.Phase(now)
	why := map[string]string{
		"available": " (due now: it runs as soon as a worker is free)",
		"scheduled": " (not yet due, and it has never failed)",
		"running":   " (a worker holds it)",
		"expired":   " (running, its lease expired: its worker stopped or is late, and the next claim takes it back)",
	}[phase]
	if j.Held {
		why = " (a transaction in progress holds it: a transaction-mode worker working it)"
	}
	return &NoJobError{fmt.Sprintf("job %d of queue %s is %s%s; %s applies to %s", id, q.Name, phase, why, action, applicable[action].jobs)}
}

// SetPaused pauses or resumes q.
func (c *Conn) SetPaused(ctx context.Context, q Queue, paused bool) error {
	return c.b.setPaused(ctx, q, paused)
}

// rowScanner is what the backends' result sets share: pgx.Rows and
// *sql.Rows.
type rowScanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// scanHolders reads (unique key, holder id) rows: the jobs that hold the
// unique keys a retry would take.
func scanHolders(rows rowScanner) (map[string]int64, error) {
	holders := map[string]int64{}
	for rows.Next() {
		var k string
		var id int64
		if err := rows.Scan(&k, &id); err != nil {
			return nil, err
		}
		holders[k] = id
	}
	return holders, rows.Err()
}
