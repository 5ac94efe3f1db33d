// Package ops holds the operations behind queuegen's stats, jobs, retry,
// cancel, purge, pause and resume commands, on PostgreSQL and on MySQL or
// MariaDB alike: Open connects to a database, and the methods of the Conn
// it returns are the operations, with the same results and guarantees on
// either engine (where an engine cannot give one, the method says so).
//
// Queues are found through the registry table, queuegen_queues; their
// tables are named from it, always quoted (pgx.Identifier on PostgreSQL;
// backticks around a name checked to be a plain identifier on MySQL), and
// every value is a bound parameter.
package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queuegen/queuegen/internal/dburl"
)

// Conn is a connection pool on one database's queues: the operations are
// its methods. It is safe for concurrent use; Close it when done.
type Conn struct {
	engine string
	b      backend
}

// backends open each engine's operations backend, by the engine's name:
// the backend's file (postgres.go, mysql.go) registers it from its init
// function. Which engine a database is, and whether it has schemas, comes
// from the engine's package (dburl); nothing here switches on its name.
var backends = map[string]func(ctx context.Context, db dburl.DB, schema string) (backend, error){}

// Serves reports whether the operations commands serve databases of the
// engine called name.
func Serves(name string) bool {
	_, ok := backends[name]
	return ok
}

// Open opens a pool on db. schema is the PostgreSQL schema holding the
// queues (the spec's; public by default); MySQL has no schemas (the
// database db names holds the queues), and there schema must be empty.
// Open does not connect: Ping does, as does any operation.
func Open(ctx context.Context, db dburl.DB, schema string) (*Conn, error) {
	open, ok := backends[db.Engine]
	if !ok {
		return nil, fmt.Errorf("ops: no engine %q", db.Engine)
	}
	b, err := open(ctx, db, schema)
	if err != nil {
		return nil, err
	}
	return &Conn{engine: db.Engine, b: b}, nil
}

// Engine is the name of the database's engine (one Serves).
func (c *Conn) Engine() string { return c.engine }

// Inheritance reports whether the engine's queue tables can inherit a
// base table (engine.Engine's Inheritance): then stats have a row across
// the base table.
func (c *Conn) Inheritance() bool { return dburl.DB{Engine: c.engine}.Inheritance() }

// Ping connects, or checks the pool's connection.
//
// It gives up after connectTimeout (10s) on a server that does not
// answer.
func (c *Conn) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	return c.b.ping(ctx)
}

// Close closes the pool.
func (c *Conn) Close() { c.b.close() }

// backend is one engine's side of the operations; Conn holds what is the
// same on both.
type backend interface {
	ping(ctx context.Context) error
	close()
	// queues reads the registry, by name.
	queues(ctx context.Context) ([]Queue, error)
	// columns lists the columns of q's table, in any order.
	columns(ctx context.Context, q Queue) ([]string, error)
	// stats fills in s's counts of q.
	stats(ctx context.Context, q Queue, s *Stats) error
	// statsWithin is stats within a time budget; exact is false when it
	// ran out.
	statsWithin(ctx context.Context, q Queue, budget time.Duration, s *Stats) (exact bool, err error)
	// oldestWithin finds the age of q's oldest due job within budget;
	// known is false when it ran out.
	oldestWithin(ctx context.Context, q Queue, budget time.Duration) (age time.Duration, known bool, err error)
	// oldestSnapshot finds the session holding the oldest snapshot.
	oldestSnapshot(ctx context.Context) (Holder, bool, error)
	// rows is the catalog's estimate of the rows of q's table.
	rows(ctx context.Context, q Queue) (int64, error)
	// estimate is the planner's estimate of q's jobs in state (one of
	// GlanceStates).
	estimate(ctx context.Context, q Queue, state string) (int64, error)
	// finished counts q's finished jobs still in its table by the minute
	// they finished, since since, within budget (nil when it ran out).
	finished(ctx context.Context, q Queue, since time.Time, budget time.Duration) ([]Minute, bool, error)
	// counters reads the server's running counts of rows inserted and
	// deleted, by table; nil where the engine keeps none.
	counters(ctx context.Context) (map[string]Counters, error)
	// periodic reads the periodic jobs' last ticks.
	periodic(ctx context.Context) ([]Tick, error)
	// baseStats fills in s's counts across the INHERITS parent base.
	baseStats(ctx context.Context, base string, s *Stats) error
	// jobs lists up to limit jobs of q matching f (checked), newest first,
	// with ids below before when it is > 0.
	jobs(ctx context.Context, q Queue, f Filter, before int64, limit int) ([]Job, error)
	// count counts the jobs of q matching f (checked) that action
	// applies to.
	count(ctx context.Context, q Queue, f Filter, action Action) (int64, error)
	// matching lists, ascending, the ids of the jobs of q matching f
	// (checked) that action applies to.
	matching(ctx context.Context, q Queue, f Filter, action Action) ([]int64, error)
	// now reads the database's clock.
	now(ctx context.Context) (time.Time, error)
	// begin begins one short transaction of Apply on q's table.
	begin(ctx context.Context, q Queue) (batch, error)
	// retryable reports an error that rolled a whole transaction back (a
	// deadlock), after which the transaction may simply run again.
	retryable(err error) bool
	setPaused(ctx context.Context, q Queue, paused bool) error
}

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

// Queue is a registered queue.
type Queue struct {
	Name, Table, Mode string
	Paused            bool
}

// Queues lists the registered queues, by name.
func (c *Conn) Queues(ctx context.Context) ([]Queue, error) { return c.b.queues(ctx) }

// Find returns the registered queue named name.
func (c *Conn) Find(ctx context.Context, name string) (Queue, error) {
	qs, err := c.Queues(ctx)
	if err != nil {
		return Queue{}, err
	}
	var names []string
	for _, q := range qs {
		if q.Name == name {
			return q, nil
		}
		names = append(names, q.Name)
	}
	return Queue{}, fmt.Errorf("no queue %q (registered: %v)", name, names)
}

// Stats are one queue's counts. The states partition the jobs: ready,
// scheduled and retrying are the available jobs (due now; not yet due
// and never failed; not yet due after failing), running are the jobs a
// worker holds (leased, or in transaction mode locked by the claiming
// transaction), then succeeded and dead.
//
// On PostgreSQL the counts are one statement's, one snapshot. On MySQL a
// plain read cannot see a row lock, so the counts take two statements in
// one READ COMMITTED transaction, milliseconds apart: the counts by state,
// then, for a transaction-mode queue, a locking read of its due jobs that
// passes over the ones a transaction holds (FOR UPDATE SKIP LOCKED, rolled
// back at once); the due jobs it could not lock are counted running, not
// ready. That probe locks the queue's free due jobs for the length of one
// scan, which claims meanwhile pass over. A lease-mode job is held by a
// transaction only inside a claim, between its SELECT and its UPDATE: on
// MySQL such a job counts as it was last committed.
type Stats struct {
	// Queue is the queue; BaseTable, instead, names the INHERITS parent
	// whose counts cover every queue that inherits it.
	Queue     string  `json:"queue,omitempty"`
	BaseTable string  `json:"base_table,omitempty"`
	Paused    bool    `json:"paused"`
	Ready     int64   `json:"ready"`
	Scheduled int64   `json:"scheduled"`
	Retrying  int64   `json:"retrying"`
	Running   int64   `json:"running"`
	Succeeded int64   `json:"succeeded"`
	Dead      int64   `json:"dead"`
	OldestAge float64 `json:"oldest_ready_age_seconds"`
	// ClaimsPerSecond counts the claims of the last minute among the jobs
	// still in the table (completed jobs of on_success: delete queues are
	// gone, so there it counts running and retried claims only); 0 where
	// the counts are estimated.
	ClaimsPerSecond float64 `json:"claims_per_second"`
	// Estimated is true when the counts are the query planner's estimates
	// (QueueStatsWithin, on a table too large to count within its budget);
	// OldestUnknown then says that finding the oldest ready job's age
	// took longer than a fifth of the budget (OldestAge is 0).
	Estimated     bool `json:"estimated"`
	OldestUnknown bool `json:"oldest_unknown"`
}

// MarshalJSON writes every key, always: queue, or base_table for the row
// across an INHERITS parent, and the other one null.
func (s Stats) MarshalJSON() ([]byte, error) {
	type fields Stats
	var queue, base *string
	if s.BaseTable != "" {
		base = &s.BaseTable
	} else {
		queue = &s.Queue
	}
	return json.Marshal(struct {
		Queue     *string `json:"queue"`
		BaseTable *string `json:"base_table"`
		fields
	}{queue, base, fields(s)})
}

// QueueStats reads the counts of every registered queue.
func (c *Conn) QueueStats(ctx context.Context) ([]Stats, error) {
	return c.eachQueue(ctx, func(q Queue) (Stats, error) {
		s := Stats{Queue: q.Name, Paused: q.Paused}
		return s, queueErr(q, c.b.stats(ctx, q, &s))
	})
}

// eachQueue is the Stats stats reads of every registered queue, in the
// registry's order.
func (c *Conn) eachQueue(ctx context.Context, stats func(Queue) (Stats, error)) ([]Stats, error) {
	qs, err := c.Queues(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Stats, 0, len(qs))
	for _, q := range qs {
		s, err := stats(q)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ErrNoBaseTable is BaseStats's error on an engine without INHERITS
// (MySQL: every queue table carries the base columns itself).
var ErrNoBaseTable = errors.New("MySQL has no INHERITS base table: its queue tables carry the base columns themselves, and stats counts each queue")

// BaseStats reads the counts of every queue inheriting base, in one
// statement: a query on an INHERITS parent reads its children too.
// PostgreSQL only: on MySQL it returns ErrNoBaseTable.
func (c *Conn) BaseStats(ctx context.Context, base string) (Stats, error) {
	s := Stats{BaseTable: base}
	return s, c.b.baseStats(ctx, base, &s)
}

// Job is one job as the jobs command shows it.
type Job struct {
	ID          int64      `json:"id"`
	State       string     `json:"state"`
	Attempt     int32      `json:"attempt"`
	MaxAttempts int32      `json:"max_attempts"`
	Priority    int16      `json:"priority"`
	RunAfter    time.Time  `json:"run_after"`
	CreatedAt   time.Time  `json:"created_at"`
	AttemptedAt *time.Time `json:"attempted_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	LockedBy    *string    `json:"locked_by"`
	LockedUntil *time.Time `json:"locked_until"`
	UniqueKey   *string    `json:"unique_key"`
	// Held is true for a job that a transaction in progress holds: in
	// transaction mode, the job a worker is working, whose claim no other
	// session sees until the worker's transaction commits. State is then
	// running, and the other fields are as last committed (the worker's
	// attempt and its time show once it commits). PostgreSQL sees every
	// held job (the row's xmax); MySQL and MariaDB see row locks only by
	// trying to take them, so there Held is found, for the due jobs of a
	// transaction-mode queue, by a locking read that passes over held rows
	// (FOR UPDATE SKIP LOCKED, rolled back at once).
	Held bool `json:"held"`
	// Errors are the failed attempts' errors, oldest first.
	Errors []string `json:"errors"`
	// Payload holds the job's payload columns by name (a JSON payload is
	// its column's document), as PostgreSQL's to_jsonb renders them: keys
	// shortest first, then in byte order (in nested documents too). On
	// MySQL they are rendered alike: booleans (TINYINT(1)) as true and
	// false, FLOAT and DOUBLE in their shortest digits in plain decimal
	// notation, times in RFC 3339 with their +00:00 offset, dates
	// as 2006-01-02, binary columns as "\\x" and their hex digits.
	Payload json.RawMessage `json:"payload"`
}

// bookkeeping are the columns every queue table has; the others are the
// payload.
var bookkeeping = []string{"id", "state", "attempt", "max_attempts", "priority", "run_after", "created_at",
	"attempted_at", "finished_at", "locked_by", "locked_until", "errors", "unique_key"}

// Filter selects jobs: one id, or every job in a state, narrowed by the
// optional fields below. States are available (due now), scheduled (not
// yet due, never failed), retrying (not yet due, after failures),
// running, succeeded and dead, as Stats counts them (a job a transaction
// holds is running: see Job.Held); "failed" means available after
// failures, and dead.
type Filter struct {
	ID    int64
	State string
	// Since and Until, where set, keep the jobs created at or after Since
	// and before Until.
	Since, Until time.Time
	// Column, where set, keeps the jobs whose payload column of that name
	// equals Value, compared as text as the database renders the column
	// (a JSON payload column as its document). Column must be one of the
	// queue's payload columns (Conn.Columns).
	Column, Value string
	// ErrorText, where set, keeps the jobs one of whose recorded errors
	// contains it (case-sensitive).
	ErrorText string
}

// predicates are the filter's states, each as a predicate on a queue
// table in either engine's SQL, in which {held} stands for the backend's
// predicate of a job a transaction in progress holds (see Job.Held): such a
// job is running, whatever its row says, as Stats counts it.
var predicates = map[string]struct{ pg, my string }{
	"all": {"true", "TRUE"},
	"available": {"state = 'available' AND run_after <= now() AND NOT {held}",
		"state = 'available' AND run_after <= UTC_TIMESTAMP(6) AND NOT {held}"},
	"scheduled": {"state = 'available' AND run_after > now() AND cardinality(errors) = 0 AND NOT {held}",
		"state = 'available' AND run_after > UTC_TIMESTAMP(6) AND JSON_LENGTH(errors) = 0 AND NOT {held}"},
	"retrying": {"state = 'available' AND run_after > now() AND cardinality(errors) > 0 AND NOT {held}",
		"state = 'available' AND run_after > UTC_TIMESTAMP(6) AND JSON_LENGTH(errors) > 0 AND NOT {held}"},
	"failed": {"(state = 'dead' OR (state = 'available' AND cardinality(errors) > 0 AND NOT {held}))",
		"(state = 'dead' OR (state = 'available' AND JSON_LENGTH(errors) > 0 AND NOT {held}))"},
	"running":   {"(state = 'running' OR {held})", "(state = 'running' OR {held})"},
	"succeeded": {"state = 'succeeded'", "state = 'succeeded'"},
	"dead":      {"state = 'dead'", "state = 'dead'"},
}

// FilterStates are the states a Filter takes, in the order the commands
// list them.
var FilterStates = []string{"all", "available", "scheduled", "retrying", "failed", "running", "succeeded", "dead"}

// CheckState refuses a state a Filter does not know, naming those it
// does.
func CheckState(state string) error {
	if _, ok := predicates[state]; !ok {
		return fmt.Errorf("unknown state %q: want %s", state, strings.Join(FilterStates, ", "))
	}
	return nil
}

// withHeld is pred with held, the backend's predicate of a held job, in
// place of {held}.
func withHeld(pred, held string) string { return strings.ReplaceAll(pred, "{held}", held) }

// check refuses a state the filter does not know, and a column that is
// not one of q's payload columns.
func (c *Conn) check(ctx context.Context, q Queue, f Filter) error {
	if f.ID == 0 {
		if err := CheckState(f.State); err != nil {
			return err
		}
	}
	if f.Column == "" {
		return nil
	}
	cols, err := c.Columns(ctx, q)
	if err != nil {
		return err
	}
	if !slices.Contains(cols, f.Column) {
		return fmt.Errorf("queue %s has no payload column %q (it has %s)", q.Name, f.Column, strings.Join(cols, ", "))
	}
	return nil
}

// Columns lists q's payload columns, by name.
func (c *Conn) Columns(ctx context.Context, q Queue) ([]string, error) {
	cols, err := c.b.columns(ctx, q)
	if err != nil {
		return nil, err
	}
	cols = slices.DeleteFunc(cols, func(name string) bool { return slices.Contains(bookkeeping, name) || name == "unique_active" })
	slices.Sort(cols)
	return cols, nil
}

// narrowing is the part of a filter past its id or state, as predicates
// in one engine's SQL, each with its one parameter: the caller numbers
// the parameters (ph gives the nth's placeholder, from 1) and quotes the
// column, which check has found among the table's.
func (f Filter) narrowing(ph func(n int) string, first int, quote func(string) string, my bool) (string, []any) {
	var where []string
	var args []any
	add := func(pred string, arg any) {
		where = append(where, fmt.Sprintf(pred, ph(first+len(args))))
		args = append(args, arg)
	}
	if !f.Since.IsZero() {
		add("created_at >= %s", f.Since.UTC())
	}
	if !f.Until.IsZero() {
		add("created_at < %s", f.Until.UTC())
	}
	switch {
	case f.Column != "" && my:
		add("CAST("+quote(f.Column)+" AS CHAR) = %s", f.Value)
	case f.Column != "":
		add(quote(f.Column)+"::text = %s", f.Value)
	}
	switch {
	case f.ErrorText != "" && my:
		add("JSON_SEARCH(errors, 'one', %s, '|') IS NOT NULL", "%"+likeEscape(f.ErrorText, '|')+"%")
	case f.ErrorText != "":
		add("strpos(array_to_string(errors, E'\\n'), %s) > 0", f.ErrorText)
	}
	if len(where) == 0 {
		return "", nil
	}
	return " AND " + strings.Join(where, " AND "), args
}

// likeEscape escapes LIKE's wildcards in s with esc.
func likeEscape(s string, esc rune) string {
	var b strings.Builder
	for _, r := range s {
		if r == '%' || r == '_' || r == esc {
			b.WriteRune(esc)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Jobs lists up to limit jobs of q matching f, newest first; with before
// > 0, only jobs with a smaller id (the next page: keyset paging, which
// stays fast however deep it goes).
func (c *Conn) Jobs(ctx context.Context, q Queue, f Filter, before int64, limit int) ([]Job, error) {
	if err := c.check(ctx, q, f); err != nil {
		return nil, err
	}
	jobs, err := c.b.jobs(ctx, q, f, before, limit)
	for i := range jobs {
		if jobs[i].Errors == nil {
			jobs[i].Errors = []string{}
		}
	}
	return jobs, err
}

// GetJob reads one job of q; a NoJobError when there is none.
func (c *Conn) GetJob(ctx context.Context, q Queue, id int64) (Job, error) {
	jobs, err := c.Jobs(ctx, q, Filter{ID: id}, 0, 1)
	if err != nil {
		return Job{}, err
	}
	if len(jobs) == 0 {
		return Job{}, &NoJobError{fmt.Sprintf("queue %s has no job %d", q.Name, id)}
	}
	return jobs[0], nil
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
		"unfinished jobs (available, scheduled, retrying and running)"},
	Purge: {"state IN ('available', 'running', 'succeeded', 'dead')", "state IN ('available', 'running', 'succeeded', 'dead')",
		"jobs in every state"},
}

// appliesTo are the filter states each action can apply to some job of.
var appliesTo = map[Action][]string{
	Retry:  {"all", "retrying", "failed", "succeeded", "dead"},
	Cancel: {"all", "available", "scheduled", "retrying", "failed", "running"},
	Purge:  FilterStates,
}

// AppliesTo reports whether action can apply to any job that the filter
// state (all, available, scheduled, retrying, failed, running, succeeded
// or dead) selects: retry never applies to running jobs, nor to available
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

// Phase is the state, of those a Filter takes and Stats counts, that j is
// in at now (the database's clock, or near it): available, scheduled,
// retrying, running, succeeded or dead.
func (j Job) Phase(now time.Time) string {
	switch {
	case j.State != "available":
		return j.State
	case !j.RunAfter.After(now):
		return "available"
	case len(j.Errors) > 0:
		return "retrying"
	}
	return "scheduled"
}

// AppliesToJob reports whether action applies to j, a job read at now:
// as Apply decides it, but on the clock given.
func (a Action) AppliesToJob(j Job, now time.Time) bool {
	switch a {
	case Retry:
		return slices.Contains([]string{"retrying", "succeeded", "dead"}, j.Phase(now))
	case Cancel:
		return j.State == "available" || j.State == "running"
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

// NoJobError is returned for an id no job of the queue has, or a job the
// action does not apply to.
type NoJobError struct{ Msg string }

// Error is the message, which names the queue and the job.
func (e *NoJobError) Error() string { return e.Msg }

// lockTimeout bounds how long an action waits for a lock it cannot skip
// (the registry row, the table's lock): operations never hang silently.
const lockTimeout = 5 * time.Second

// connectTimeout bounds connecting, where the address sets no bound of its
// own: a server that accepts the connection and never answers is an
// error, not a command that hangs.
const connectTimeout = 10 * time.Second

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
