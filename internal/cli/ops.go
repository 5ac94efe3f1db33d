package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/internal/ops"
	"github.com/queuegen/queuegen/internal/spec"
)

// opsFlags are the flags every operations command takes.
type opsFlags struct {
	c      *invocation
	spec   *spec.Spec // when -f names a spec file
	db     *string
	file   *string
	schema *string
	queue  *string
	json   *bool
	// check, when set, checks the command's own flags once they are
	// parsed, before anything connects.
	check func() error
}

func newOpsFlags(c *invocation, needQueue bool) *opsFlags {
	o := &opsFlags{c: c, file: c.specFlag(), db: c.dbFlag(), json: c.jsonFlag(),
		schema: c.fs.String("schema", "", "the queues' schema (default: the spec's, else on PostgreSQL the first of the connection's search_path, public by default, and dbo on SQL Server; MySQL has none)")}
	if needQueue {
		o.queue = c.fs.String("queue", "", "the queue")
	}
	return o
}

// open parses the flags and connects. The schema is --schema, else the
// spec's (-f), else the engine's default (on PostgreSQL the connection's
// current schema, public unless the URL's search_path says otherwise; dbo
// on SQL Server); MySQL has no schemas (the
// database --db names holds the queues), and there --schema is refused.
func (o *opsFlags) open(ctx context.Context) (*ops.Conn, error) {
	if err := o.c.parse(); err != nil {
		return nil, err
	}
	if err := o.c.noArgs(); err != nil {
		return nil, err
	}
	if o.check != nil {
		if err := o.check(); err != nil {
			return nil, err
		}
	}
	url, err := o.c.databaseURL(*o.db)
	if err != nil {
		return nil, err
	}
	if o.queue != nil && *o.queue == "" {
		return nil, usageError{errors.New("--queue is required")}
	}
	loaded, err := specFor(url, *o.file)
	if err != nil {
		return nil, err
	}
	schema := *o.schema
	switch {
	case !url.HasSchemas():
		if schema != "" {
			return nil, noSchemaOnMySQL(schema)
		}
	case schema == "":
		// Unnamed, PostgreSQL's is the connection's current schema (public
		// by default), SQL Server's dbo: see ops.Open.
		if loaded != nil {
			o.spec = loaded
			if loaded.Has("schema") {
				schema = loaded.Schema
			}
		} else if o.c.given("f") {
			// Not the default's absence: a spec named and not found must not
			// mean schema public, which may hold another spec's queues.
			return nil, usageError{fmt.Errorf("-f %s: %v", *o.file, err)}
		}
	}
	conn, err := ops.Open(ctx, url, schema)
	if err != nil {
		return nil, fmt.Errorf("the database URL: %s", redactErr(err, url.URL))
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("cannot connect to the database: %s", redactErr(errors.New(migrate.OneLine(err)), url.URL))
	}
	return conn, nil
}

// noSchemaOnMySQL refuses --schema on a MySQL database.
func noSchemaOnMySQL(schema string) error {
	return usageError{fmt.Errorf("--schema %s: MySQL and MariaDB have no schemas; the database --db names holds the queues", schema)}
}

// openQueue is open, then the registered queue --queue names.
func (o *opsFlags) openQueue(ctx context.Context) (*ops.Conn, ops.Queue, error) {
	conn, err := o.open(ctx)
	if err != nil {
		return nil, ops.Queue{}, err
	}
	q, err := conn.Find(ctx, *o.queue)
	if err != nil {
		conn.Close()
		return nil, ops.Queue{}, err
	}
	return conn, q, nil
}

func runStats(c *invocation) error {
	o := newOpsFlags(c, false)
	exact := c.fs.Bool("exact", false, "count every queue exactly, however long its table takes to read")
	budget := c.fs.Duration("budget", 50*time.Millisecond, "without --exact: count a queue exactly if that takes at most this long, else show the planner's estimates, marked ≈")
	warnSnapshot := c.fs.Duration("warn-snapshot", 30*time.Second, "warn (on stderr) when a session has held a snapshot open this long: claims slow down until it ends")
	ctx := context.Background()
	conn, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if *budget <= 0 {
		return usageError{errors.New("--budget must be positive")}
	}
	var stats []ops.Stats
	if *exact {
		stats, err = conn.QueueStats(ctx)
	} else {
		stats, err = conn.QueueStatsWithin(ctx, *budget)
	}
	if err != nil {
		return err
	}
	if o.spec != nil && conn.Inheritance() {
		base, ok, err := baseRow(ctx, conn, o.spec, stats, *exact)
		if err != nil {
			return err
		}
		if ok {
			stats = append(stats, base)
		}
	}
	if err := warnHeldSnapshot(ctx, c, conn, *warnSnapshot); err != nil {
		return err
	}
	if *o.json {
		return c.printJSON(stats)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "QUEUE\tREADY\tSCHEDULED\tRETRYING\tRUNNING\tEXPIRED\tSUCCEEDED\tDEAD\tOLDEST READY\tCLAIMS/S (1m)\tFAILED (1h)\t")
	estimated := false
	for _, s := range stats {
		name := s.Queue
		if s.BaseTable != "" {
			name = "* (" + s.BaseTable + ")"
		}
		if s.Paused {
			name += " (paused)"
		}
		count := func(n int64) string { return strconv.FormatInt(n, 10) }
		oldest := (time.Duration(s.OldestAge * float64(time.Second))).Round(time.Millisecond).String()
		if s.Ready == 0 || s.OldestAge == 0 { // no ready job (or, estimated, none found)
			oldest = "-"
		}
		claims := strconv.FormatFloat(s.ClaimsPerSecond, 'f', 2, 64)
		if s.Estimated {
			estimated = true
			count = func(n int64) string { return "≈" + strconv.FormatInt(n, 10) }
			claims = "-"
			if s.OldestUnknown {
				oldest = "?"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, count(s.Ready), count(s.Scheduled), count(s.Retrying), count(s.Running), count(s.Expired),
			count(s.Succeeded), count(s.Dead), oldest, claims, s.Hour())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "FAILED (1h): errors recorded in the last hour ÷ (those + jobs succeeded in it), where succeeded jobs are kept (else the count alone; - not measured)")
	if estimated {
		fmt.Fprintf(c.stdout, "≈: the planner's estimates, for tables too large to count within %s (--exact counts them; ? and - were not measured)\n", *budget)
	}
	return nil
}

// warnHeldSnapshot warns on stderr when the server's oldest snapshot has
// been held open for at least after.
func warnHeldSnapshot(ctx context.Context, c *invocation, conn *ops.Conn, after time.Duration) error {
	h, ok, err := conn.OldestSnapshot(ctx)
	if err != nil {
		return fmt.Errorf("finding the oldest open snapshot: %w", err)
	}
	if !ok || h.Age < after {
		return nil
	}
	who := fmt.Sprintf("session %d", h.PID)
	if h.User != "" {
		who += " (user " + h.User
		if h.Application != "" {
			who += ", " + h.Application
		}
		who += ")"
	}
	fmt.Fprintf(c.stderr, "warning: %s has held a snapshot open for %s: until it ends, every claim walks past the jobs worked since it began, and claims grow slower (see BENCHMARKS.md, \"Held snapshot\")\n", who, h.Age.Round(time.Second))
	if h.Query != "" {
		fmt.Fprintf(c.stderr, "  its statement: %s\n", strings.Join(strings.Fields(h.Query), " "))
	}
	return nil
}

// baseRow is stats' row across the spec's INHERITS parent, if a queue
// inherits it: counted through the parent with exact, else the sum of the
// inheriting queues' rows (estimated if one of them is).
func baseRow(ctx context.Context, conn *ops.Conn, sp *spec.Spec, stats []ops.Stats, exact bool) (ops.Stats, bool, error) {
	inherits := map[string]bool{}
	for _, q := range sp.Queues {
		if q.Inherits {
			inherits[q.Name] = true
		}
	}
	if len(inherits) == 0 {
		return ops.Stats{}, false, nil
	}
	if exact {
		s, err := conn.BaseStats(ctx, sp.Base.Table)
		return s, err == nil, err
	}
	sum := ops.Stats{BaseTable: sp.Base.Table}
	for _, s := range stats {
		if !inherits[s.Queue] {
			continue
		}
		sum.Ready += s.Ready
		sum.Scheduled += s.Scheduled
		sum.Retrying += s.Retrying
		sum.Running += s.Running
		sum.Expired += s.Expired
		sum.Succeeded += s.Succeeded
		sum.Dead += s.Dead
		sum.ClaimsPerSecond += s.ClaimsPerSecond
		sum.OldestAge = max(sum.OldestAge, s.OldestAge)
		sum.Estimated = sum.Estimated || s.Estimated
		sum.OldestUnknown = sum.OldestUnknown || s.OldestUnknown
	}
	return sum, true, nil
}

func runJobs(c *invocation) error {
	o := newOpsFlags(c, true)
	state := c.fs.String("state", "all", strings.Join(ops.FilterStates, ", "))
	id := idFlag(c, "id", "show this job whole: every field, error and the payload")
	before := idFlag(c, "before", "list jobs with smaller ids only (the next page: give the last id listed)")
	limit := c.fs.Int("limit", 50, "list at most this many jobs")
	o.check = func() error {
		switch {
		case *limit < 1:
			return usageError{fmt.Errorf("--limit %d: want at least 1", *limit)}
		case *id != 0 && c.given("state", "before", "limit"):
			return usageError{errors.New("--id shows one job: --state, --before and --limit do not apply")}
		}
		if err := ops.CheckState(*state); err != nil {
			return usageError{fmt.Errorf("--state: %v", err)}
		}
		return nil
	}
	ctx := context.Background()
	conn, q, err := o.openQueue(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if *id != 0 {
		job, err := conn.GetJob(ctx, q, *id)
		if err != nil {
			return err
		}
		if *o.json {
			return c.printJSON(job)
		}
		return printJob(c, q, job)
	}
	jobs, err := conn.Jobs(ctx, q, ops.Filter{State: *state}, *before, *limit)
	if err != nil {
		return err
	}
	if *o.json {
		if jobs == nil {
			jobs = []ops.Job{}
		}
		return c.printJSON(jobs)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tATTEMPT\tRUN AFTER\tPAYLOAD\tLAST ERROR")
	for _, j := range jobs {
		last := ""
		if len(j.Errors) > 0 {
			last, _, _ = strings.Cut(j.Errors[len(j.Errors)-1], "\n")
			last = shown(last)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d/%d\t%s\t%s\t%s\n", j.ID, j.State, j.Attempt, j.MaxAttempts, j.RunAfter.UTC().Format(time.DateTime),
			truncate(compact(j.Payload), 60), truncate(last, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s of queue %s (state %s)", plural(len(jobs), "job"), q.Name, *state)
	if len(jobs) == *limit {
		fmt.Fprintf(c.stdout, "; more with --before %d", jobs[len(jobs)-1].ID)
	}
	fmt.Fprintln(c.stdout)
	return nil
}

// printJob shows one job whole.
func printJob(c *invocation, q ops.Queue, j ops.Job) error {
	w := c.stdout
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	str := func(s *string) string {
		if s == nil {
			return "-"
		}
		return shown(*s)
	}
	fmt.Fprintf(w, "job %d of queue %s\n", j.ID, q.Name)
	fmt.Fprintf(w, "  state         %s\n  attempt       %d of %d\n  priority      %d\n", j.State, j.Attempt, j.MaxAttempts, j.Priority)
	fmt.Fprintf(w, "  created at    %s\n  run after     %s\n  attempted at  %s\n  finished at   %s\n", at(&j.CreatedAt), at(&j.RunAfter), at(j.AttemptedAt), at(j.FinishedAt))
	fmt.Fprintf(w, "  locked by     %s\n  locked until  %s\n  unique key    %s\n", str(j.LockedBy), at(j.LockedUntil), str(j.UniqueKey))
	switch {
	case j.Held && j.Uncommitted:
		// Read without locks: as the holder has it (see ops.Job.Held).
		fmt.Fprintf(w, "  held          by a transaction in progress (a transaction-mode worker working it): the fields above are as\n"+
			"                that transaction has them, not yet committed\n")
	case j.Held:
		fmt.Fprintf(w, "  held          by a transaction in progress (a transaction-mode worker working it): the fields above are as last\n"+
			"                committed; its attempt and times show once that transaction commits\n")
	}
	var payload bytes.Buffer
	if err := json.Indent(&payload, j.Payload, "  ", "  "); err != nil {
		payload.Write(j.Payload)
	}
	fmt.Fprintf(w, "  payload       %s\n", payload.String())
	// Each error with its time and attempt, where recorded (errors from
	// before the failures column have none), the stack of a panic after
	// its message.
	fmt.Fprintf(w, "  errors        %d\n", len(j.Errors))
	for i, f := range j.Failures {
		when := "time unknown"
		if f.At != nil {
			when = at(f.At)
		}
		if f.Attempt != nil {
			when += fmt.Sprintf(", attempt %d", *f.Attempt)
		}
		text := f.Error
		if f.Stack != "" {
			text += "\n" + f.Stack
		}
		fmt.Fprintf(w, "    %d (%s): %s\n", i+1, when, strings.ReplaceAll(shown(text), "\n", "\n      "))
	}
	return nil
}

// shown is s as a terminal may print it: control characters other than
// newline and tab (an escape sequence in a job's error could clear the
// screen or retitle the window) written as Go escapes, \x1b and the like.
func shown(s string) string {
	if !strings.ContainsFunc(s, isHostile) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isHostile(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isHostile(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }

// compact is a JSON document on one line.
func compact(doc json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, doc) != nil {
		return string(doc)
	}
	return b.String()
}

// truncate cuts s to n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Actions, as the commands name them.
const (
	actionRetry  = ops.Retry
	actionCancel = ops.Cancel
	actionPurge  = ops.Purge
)

// runAction is retry, cancel and purge: on one job by id, or on every job
// in a state, asking for --yes before touching more than one job. Jobs it
// must skip (held by a transaction in progress; for retry, a unique key
// held by another job) are named, and make the command fail.
func runAction(action ops.Action) func(*invocation) error {
	return func(c *invocation) error {
		o := newOpsFlags(c, true)
		id := idFlag(c, "id", "the job's id")
		state := c.fs.String("state", "", "every job in this state (see queuegen jobs)")
		yes := c.fs.Bool("yes", false, "do it when more than one job matches")
		o.check = func() error {
			if (*id == 0) == (*state == "") {
				return usageError{errors.New("give --id or --state")}
			}
			if *state == "" {
				return nil
			}
			if err := ops.CheckState(*state); err != nil {
				return usageError{fmt.Errorf("--state: %v", err)}
			}
			if !action.AppliesTo(*state) {
				return usageError{fmt.Errorf("%s never applies to %s jobs (it applies to %s): nothing to do", action, *state, action.Applies())}
			}
			return nil
		}
		ctx := context.Background()
		conn, q, err := o.openQueue(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		f := ops.Filter{ID: *id, State: *state}
		past := map[ops.Action]string{ops.Retry: "retried", ops.Cancel: "cancelled", ops.Purge: "purged"}[action]
		if *id == 0 && !*yes {
			n, err := conn.Count(ctx, q, f, action)
			if err != nil {
				return err
			}
			if n > 1 {
				fmt.Fprintf(c.stdout, "%s of queue %s match (state %s): nothing %s; pass --yes to %s them\n", plural(n, "job"), q.Name, *state, past, action)
				return errReported
			}
		}
		p := newProgress(c.stderr)
		res, err := conn.Apply(ctx, q, f, action, func(done, total int) {
			if total > ops.BatchSize {
				p.line(fmt.Sprintf("%s: %d of %d jobs", action, done, total))
			}
		})
		p.end()
		if err != nil {
			return err
		}
		if *o.json {
			if err := c.printJSON(struct {
				Queue  string     `json:"queue"`
				Action ops.Action `json:"action"`
				*ops.Result
			}{q.Name, action, res}); err != nil {
				return err
			}
			if res.Skipped() > 0 {
				return errReported
			}
			return nil
		}
		fmt.Fprintf(c.stdout, "%s %s of queue %s%s\n", past, plural(len(res.Changed), "job"), q.Name, idList(res.Changed))
		if len(res.Locked) > 0 {
			fmt.Fprintf(c.stdout, "skipped %s that a transaction in progress holds (a transaction-mode worker working them, or a long transaction)%s; run again once it ends\n",
				plural(len(res.Locked), "job"), idList(res.Locked))
		}
		for _, cf := range res.Conflicts {
			fmt.Fprintf(c.stdout, "not retried: job %d, as job %d holds its unique key %q (retry job %d once that one finishes)\n", cf.ID, cf.Holder, cf.Key, cf.ID)
		}
		if n := res.Skipped(); n > 0 {
			return fmt.Errorf("%s %d of %s; %d could not be %s (see above)", past, len(res.Changed), plural(len(res.Changed)+n, "matching job"), n, past)
		}
		return nil
	}
}

// idFlag is a job id flag: decimal digits only (flag's Int64 would take
// 0x10 as 16 and 010 as 8), and positive; 0 when not given.
func idFlag(c *invocation, name, usage string) *int64 {
	var id int64
	c.fs.Func(name, usage, func(s string) error {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || strings.TrimLeft(s, "0123456789") != "" {
			return fmt.Errorf("want a job id: a positive whole number in decimal digits")
		}
		id = n
		return nil
	})
	return &id
}

// plural writes n and the noun, plural unless n is 1.
func plural[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func idList(ids []int64) string {
	if len(ids) == 0 {
		return ""
	}
	parts := make([]string, 0, min(len(ids), 20))
	for _, id := range ids[:min(len(ids), 20)] {
		parts = append(parts, fmt.Sprint(id))
	}
	more := ""
	if len(ids) > 20 {
		more = fmt.Sprintf(", … (%d more)", len(ids)-20)
	}
	return ": " + strings.Join(parts, ", ") + more
}

func runPause(paused bool) func(*invocation) error {
	return func(c *invocation) error {
		o := newOpsFlags(c, true)
		ctx := context.Background()
		conn, q, err := o.openQueue(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if err := conn.SetPaused(ctx, q, paused); err != nil {
			return err
		}
		if *o.json {
			return c.printJSON(map[string]any{"queue": q.Name, "paused": paused})
		}
		verb := map[bool]string{true: "paused", false: "resumed"}[paused]
		fmt.Fprintf(c.stdout, "queue %s %s: workers see it within their pause check (about a second)\n", q.Name, verb)
		return nil
	}
}

// runNodes prints the nodes table, each node's leases, and the jobs
// leased to nodes that stopped heartbeating (stale) or never recorded
// themselves.
func runNodes(c *invocation) error {
	o := newOpsFlags(c, false)
	ctx := context.Background()
	conn, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	r, err := conn.Nodes(ctx)
	if err != nil {
		return err
	}
	if *o.json {
		return c.printJSON(r)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tQUEUE\tMODE\tHOST\tPID\tCONCURRENCY\tRUNNING\tLEASES\tSTARTED\tLAST HEARTBEAT\tSTATUS\t")
	for _, n := range r.Nodes {
		status := "alive"
		if n.Stale {
			status = fmt.Sprintf("STALE (no heartbeat for over %s)", n.StaleAfter())
		}
		held := "-"
		if n.Mode == "lease" {
			held = strconv.FormatInt(n.Held, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s ago\t%s ago (every %s)\t%s\t\n", n.Node, n.Queue, n.Mode, n.Host, n.PID, n.Concurrency, n.Running, held,
			r.Now.Sub(n.StartedAt).Round(time.Second), beatAge(r.Now.Sub(n.HeartbeatAt)), n.Every, status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Nodes) == 0 {
		fmt.Fprintln(c.stdout, "(no worker has recorded its node)")
	}
	if len(r.Leases) == 0 {
		fmt.Fprintln(c.stdout, "\nNo job is leased to a node that stopped.")
		return nil
	}
	fmt.Fprintf(c.stdout, "\n%d job(s) leased to nodes that stopped (stale, or with no node row); each comes back when its lease expires:\n", r.LeasesTotal)
	tw = tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tID\tNODE\tATTEMPT\tLEASE\t")
	for _, l := range r.Leases {
		node := l.Node + " (stale)"
		if !l.Known {
			node = l.Node + " (no node row)"
		}
		lease := "expires in " + l.LockedUntil.Sub(r.Now).Round(time.Second).String()
		if l.Expired {
			lease = "expired " + r.Now.Sub(l.LockedUntil).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t\n", l.Queue, l.ID, node, l.Attempt, lease)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if int64(len(r.Leases)) < r.LeasesTotal {
		fmt.Fprintf(c.stdout, "(the first %d listed)\n", len(r.Leases))
	}
	return nil
}

// beatAge is a heartbeat's age: to the millisecond within a minute, where
// a beat interval lives, and to the second past it.
func beatAge(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
