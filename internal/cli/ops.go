package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/internal/ops"
	"github.com/queuegen/queuegen/internal/spec"
)

// opsFlags are the flags every operations command takes.
type opsFlags struct {
	spec   *spec.Spec // when -f names a spec file
	fs     *flag.FlagSet
	db     *string
	file   *string
	schema *string
	queue  *string
}

func newOpsFlags(name string, stderr io.Writer, needQueue bool) *opsFlags {
	fs, file := flags(name, stderr)
	o := &opsFlags{fs: fs, file: file,
		db:     fs.String("db", os.Getenv("DATABASE_URL"), "the database URL (default $DATABASE_URL)"),
		schema: fs.String("schema", "", "the queues' PostgreSQL schema (default: the spec's, else public)"),
	}
	if needQueue {
		o.queue = fs.String("queue", "", "the queue")
	}
	return o
}

// open parses the flags and connects.
func (o *opsFlags) open(ctx context.Context, args []string) (*pgxpool.Pool, string, error) {
	if err := parse(o.fs, args); err != nil {
		return nil, "", err
	}
	if *o.db == "" {
		return nil, "", usageError{errors.New("--db URL is required (or set DATABASE_URL)")}
	}
	if o.queue != nil && *o.queue == "" {
		return nil, "", usageError{errors.New("--queue is required")}
	}
	schema := *o.schema
	if schema == "" {
		schema = spec.DefaultSchema
		if _, err := os.Stat(*o.file); err == nil {
			s, err := spec.Load(*o.file)
			if err != nil {
				return nil, "", err
			}
			schema, o.spec = s.Schema, s
		}
	}
	pool, err := pgxpool.New(ctx, *o.db)
	if err != nil {
		return nil, "", err
	}
	return pool, schema, nil
}

// openQueue is open, then the registered queue --queue names.
func (o *opsFlags) openQueue(ctx context.Context, args []string) (*pgxpool.Pool, string, ops.Queue, error) {
	pool, schema, err := o.open(ctx, args)
	if err != nil {
		return nil, "", ops.Queue{}, err
	}
	q, err := ops.Find(ctx, pool, schema, *o.queue)
	if err != nil {
		pool.Close()
		return nil, "", ops.Queue{}, err
	}
	return pool, schema, q, nil
}

func runStats(args []string, stdout, stderr io.Writer) error {
	o := newOpsFlags("stats", stderr, false)
	asJSON := o.fs.Bool("json", false, "print JSON")
	ctx := context.Background()
	pool, schema, err := o.open(ctx, args)
	if err != nil {
		return err
	}
	defer pool.Close()
	stats, err := ops.QueueStats(ctx, pool, schema)
	if err != nil {
		return err
	}
	if o.spec != nil && slices.ContainsFunc(o.spec.Queues, func(q *spec.Queue) bool { return q.Inherits }) {
		all, err := ops.BaseStats(ctx, pool, schema, o.spec.Base.Table)
		if err != nil {
			return err
		}
		stats = append(stats, all)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(stats)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "QUEUE\tREADY\tSCHEDULED\tRETRYING\tRUNNING\tSUCCEEDED\tDEAD\tOLDEST READY\tCLAIMS/S (1m)\t")
	for _, s := range stats {
		name := s.Queue
		if s.Paused {
			name += " (paused)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%.2f\t\n", name, s.Ready, s.Scheduled, s.Retrying, s.Running, s.Succeeded, s.Dead,
			(time.Duration(s.OldestAge * float64(time.Second))).Round(time.Millisecond), s.ClaimsPerSecond)
	}
	return tw.Flush()
}

func runJobs(args []string, stdout, stderr io.Writer) error {
	o := newOpsFlags("jobs", stderr, true)
	state := o.fs.String("state", "failed", "available, scheduled, retrying, failed, running, succeeded or dead")
	limit := o.fs.Int("limit", 50, "list at most this many jobs")
	asJSON := o.fs.Bool("json", false, "print JSON")
	ctx := context.Background()
	pool, schema, q, err := o.openQueue(ctx, args)
	if err != nil {
		return err
	}
	defer pool.Close()
	jobs, err := ops.Jobs(ctx, pool, schema, q, ops.Filter{State: *state}, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(jobs)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tATTEMPT\tRUN AFTER\tLAST ERROR")
	for _, j := range jobs {
		last := ""
		if j.LastError != nil {
			last, _, _ = strings.Cut(*j.LastError, "\n")
		}
		fmt.Fprintf(tw, "%d\t%s\t%d/%d\t%s\t%s\n", j.ID, j.State, j.Attempt, j.MaxAttempts, j.RunAfter.UTC().Format(time.DateTime), last)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s of queue %s (state %s)\n", plural(len(jobs), "job"), q.Name, *state)
	return nil
}

// runAction is retry, cancel and purge: on one job by id, or on every job
// in a state, asking for --yes before touching more than one job. Jobs it
// must skip (held by a transaction in progress; for retry, a unique key
// held by another job) are named, and make the command fail.
func runAction(action ops.Action) func([]string, io.Writer, io.Writer) error {
	return func(args []string, stdout, stderr io.Writer) error {
		o := newOpsFlags(string(action), stderr, true)
		id := o.fs.Int64("id", 0, "the job's id")
		state := o.fs.String("state", "", "every job in this state (see queuegen jobs)")
		yes := o.fs.Bool("yes", false, "do it when more than one job matches")
		ctx := context.Background()
		pool, schema, q, err := o.openQueue(ctx, args)
		if err != nil {
			return err
		}
		defer pool.Close()
		if (*id == 0) == (*state == "") {
			return usageError{errors.New("give --id or --state")}
		}
		f := ops.Filter{ID: *id, State: *state}
		past := map[ops.Action]string{ops.Retry: "retried", ops.Cancel: "cancelled", ops.Purge: "purged"}[action]
		if *id == 0 && !*yes {
			n, err := ops.Count(ctx, pool, schema, q, f, action)
			if err != nil {
				return err
			}
			if n > 1 {
				fmt.Fprintf(stdout, "%s of queue %s match (state %s): nothing %s; pass --yes to %s them\n", plural(n, "job"), q.Name, *state, past, action)
				return errStale // exit status 1, message printed
			}
		}
		res, err := ops.Apply(ctx, pool, schema, q, f, action)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s of queue %s%s\n", past, plural(len(res.Changed), "job"), q.Name, idList(res.Changed))
		if len(res.Locked) > 0 {
			fmt.Fprintf(stdout, "skipped %s that a transaction in progress holds (a transaction-mode worker working them, or a long transaction)%s; run again once it ends\n",
				plural(len(res.Locked), "job"), idList(res.Locked))
		}
		for _, c := range res.Conflicts {
			fmt.Fprintf(stdout, "not retried: job %d, as job %d holds its unique key %q (retry job %d once that one finishes)\n", c.ID, c.Holder, c.Key, c.ID)
		}
		if n := res.Skipped(); n > 0 {
			return fmt.Errorf("%s %d of %s; %d could not be %s (see above)", past, len(res.Changed), plural(len(res.Changed)+n, "matching job"), n, past)
		}
		return nil
	}
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

func runPause(paused bool) func([]string, io.Writer, io.Writer) error {
	return func(args []string, stdout, stderr io.Writer) error {
		name := map[bool]string{true: "pause", false: "resume"}[paused]
		o := newOpsFlags(name, stderr, true)
		ctx := context.Background()
		pool, schema, q, err := o.openQueue(ctx, args)
		if err != nil {
			return err
		}
		defer pool.Close()
		if err := ops.SetPaused(ctx, pool, schema, q, paused); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "queue %s %sd: workers see it within their pause check (about a second)\n", q.Name, name)
		return nil
	}
}
