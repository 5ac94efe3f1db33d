package evolve

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
)

// Options change what Diff may do.
type Options struct {
	// AllowDrop lets Diff drop queues (tables) and columns the spec no
	// longer has. Without it such a change is refused.
	AllowDrop bool
}

// Change is one migration file's worth of schema change.
type Change struct {
	// Name is the migration file's name after the version, e.g.
	// "create_sms_queue".
	Name string
	// Initial is true for the first migration, the diff from nothing.
	Initial bool
	// Summary is one line per change, for the file header.
	Summary []string
	// NoTransaction is true when the migration builds or drops indexes
	// online on existing tables, which on some engines cannot run in a
	// transaction. Such a migration holds nothing else, and each of its
	// statements can run again, so a failed run can be re-run.
	NoTransaction bool
	// Up and Down are the statements, each with its comment, in order.
	Up, Down []string
}

// Refusal is a spec change Diff will not express as a migration.
type Refusal struct {
	What, Why, Manual string
}

// RefusedError lists every refused change. Nothing is generated.
type RefusedError struct {
	Refusals []Refusal
	// Writable summarises the changes of the same spec change that
	// queuegen would write itself, were nothing refused.
	Writable []string
}

// Error lists each refused change, why, and what to do instead.
func (e *RefusedError) Error() string {
	var b strings.Builder
	b.WriteString("queuegen cannot turn these spec changes into a safe migration:")
	for _, r := range e.Refusals {
		fmt.Fprintf(&b, "\n  - %s: %s\n    what to do: %s", r.What, r.Why, r.Manual)
	}
	b.WriteString("\nNothing was written.")
	return b.String()
}

// Diff compares the catalog the migrations so far produce (old) with the
// spec's (now) and returns the migrations that take a database from one to
// the other, written by ddl: none when they agree, one in a transaction,
// or (when indexes of existing tables change) that one followed by one
// that only builds and drops indexes online. From an empty old catalog the
// result is the first migration, which creates everything.
func Diff(old, now *catalog.Catalog, ddl engine.DDL, opts Options) ([]*Change, error) {
	d := &differ{old: old, now: now, ddl: ddl, opts: opts}
	d.diff()
	if len(d.refusals) > 0 {
		e := &RefusedError{Refusals: d.refusals}
		if len(d.steps) > 0 {
			e.Writable = d.summary
		}
		return nil, e
	}
	var tx, online []step
	for _, s := range d.steps {
		if s.online {
			online = append(online, s)
		} else {
			tx = append(tx, s)
		}
	}
	name := d.name()
	var changes []*Change
	if len(tx) > 0 {
		changes = append(changes, change(name, d.summary, tx, false))
	}
	if len(online) > 0 {
		if len(tx) > 0 {
			name += "_indexes"
		}
		changes = append(changes, change(name, d.summary, online, ddl.OnlineIndexesNeedNoTransaction()))
	}
	for _, c := range changes {
		c.Initial = d.initial()
		if s, ok := ddl.(engine.SessionSetter); ok {
			c.Up = append([]string{s.SessionOptions()}, c.Up...)
			c.Down = append([]string{s.SessionOptions()}, c.Down...)
		}
	}
	return changes, nil
}

func change(name string, summary []string, steps []step, noTx bool) *Change {
	c := &Change{Name: name, Summary: summary, NoTransaction: noTx}
	for _, s := range steps {
		c.Up = append(c.Up, s.up)
	}
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].down != "" {
			c.Down = append(c.Down, steps[i].down)
		}
	}
	return c
}

// step is one statement (or a few that belong together) and its undo.
type step struct {
	up, down string
	// online marks an index built or dropped on an existing table.
	online bool
	// notInSchema marks a statement the schema file sqlc reads leaves
	// out: one that writes rows (the registry), or makes a partition,
	// which sqlc would take for a table of its own.
	notInSchema bool
}

type differ struct {
	old, now *catalog.Catalog
	ddl      engine.DDL
	opts     Options
	renamed  map[string]bool // new names of renamed tables
	steps    []step
	summary  []string
	actions  []string
	refusals []Refusal
}

// initial reports whether this is the first migration.
func (d *differ) initial() bool { return d.old.Registry == nil }

func (d *differ) add(up, down string) { d.steps = append(d.steps, step{up: up, down: down}) }

func (d *differ) addData(up, down string) {
	d.steps = append(d.steps, step{up: up, down: down, notInSchema: true})
}

func (d *differ) addOnline(up, down string) {
	d.steps = append(d.steps, step{up: up, down: down, online: true})
}

func (d *differ) note(action, summary string) {
	if t, ok := strings.CutPrefix(action, "alter_"); ok && d.renamed[t] {
		action = "" // named by the rename
	}
	if action != "" && !slices.Contains(d.actions, action) {
		d.actions = append(d.actions, action)
	}
	d.summary = append(d.summary, summary)
}

func (d *differ) refuse(what, why, manual string) {
	d.refusals = append(d.refusals, Refusal{What: what, Why: why, Manual: manual})
}

// manualPath is the advice for a change queuegen will not write.
const manualPath = "write this migration by hand: generate with --manual (go tool queuegen generate --manual, or queuegen generate --manual) for a new migration file to fill in (the spec's schema is recorded as its result)"

// allowDrop is the advice for a drop: generate with --allow-drop.
const allowDrop = "generate with --allow-drop (go tool queuegen generate --allow-drop, or queuegen generate --allow-drop) to drop it"

func (d *differ) diff() {
	if !d.initial() && d.old.Schema != d.now.Schema {
		d.refuse(fmt.Sprintf("schema %s → %s", d.old.Schema, d.now.Schema),
			"moving every table to another schema is not a change queuegen writes", manualPath+", e.g. ALTER TABLE … SET SCHEMA for each table")
		return
	}
	if d.initial() {
		if s := d.ddl.CreateSchema(); s != "" {
			d.add(s, "")
			d.note("", "create schema "+d.now.Schema)
		}
		d.createTable(d.now.Registry, "the queue registry")
	}
	if d.now.Nodes != nil && d.old.Nodes == nil {
		d.createTable(d.now.Nodes, "worker nodes and their heartbeats")
	}
	if d.now.Periodic != nil && d.old.Periodic == nil {
		d.createTable(d.now.Periodic, "periodic jobs")
	}
	d.reference()
	for _, f := range d.now.Functions {
		if !slices.Contains(d.old.Functions, f) {
			d.add(d.ddl.CreateFunction(f), d.ddl.DropFunction(f))
			d.note("create_"+f, "create function "+f+" (push notifications)")
		}
	}
	d.base()
	matched := map[string]bool{}
	oldByName := map[string]*catalog.Queue{}
	for _, q := range d.old.Queues {
		oldByName[q.Name] = q
	}
	newNames := map[string]bool{}
	for _, q := range d.now.Queues {
		newNames[q.Name] = true
	}
	for _, nq := range d.now.Queues {
		oq := oldByName[nq.Name]
		if oq == nil && nq.RenamedFrom != "" && !newNames[nq.RenamedFrom] {
			oq = oldByName[nq.RenamedFrom]
		}
		if oq == nil {
			d.createQueue(nq)
			continue
		}
		matched[oq.Name] = true
		d.alterQueue(oq, nq)
	}
	for _, oq := range d.old.Queues {
		if !matched[oq.Name] {
			d.dropQueue(oq)
		}
	}
	for _, f := range d.old.Functions {
		if !slices.Contains(d.now.Functions, f) {
			d.add(d.ddl.DropFunction(f), d.ddl.CreateFunction(f))
			d.note("drop_"+f, "drop function "+f+" (no queue notifies)")
		}
	}
	if d.now.Periodic == nil && d.old.Periodic != nil {
		d.add(d.ddl.DropTable(d.old.Periodic), d.ddl.CreateTable(d.old.Periodic))
		d.note("drop_"+d.old.Periodic.Name, "drop table "+d.old.Periodic.Name+" (no periodic jobs left)")
	}
	if d.old.Base != nil && d.now.Base == nil {
		if !d.opts.AllowDrop {
			d.refuse("drop base table "+d.old.Base.Name, "no queue inherits it any more, and dropping a table loses its rows",
				allowDrop)
			return
		}
		d.add(d.ddl.DropTable(d.old.Base), d.ddl.CreateTable(d.old.Base))
		d.note("drop_"+d.old.Base.Name, "drop base table "+d.old.Base.Name)
	}
}

// reference makes queuegen's own tables reference tables, copied to
// every node of the cluster, once a queue is distributed (and a table of
// queuegen's created later, once they are), or tables of one node again
// when no queue is distributed any more.
func (d *differ) reference() {
	r, ok := d.ddl.(engine.DistributedDDL)
	if !ok || !d.now.Reference && !d.old.Reference {
		return
	}
	own := []*catalog.Table{d.now.Registry, d.now.Nodes, d.now.Periodic}
	oldOwn := map[string]bool{}
	if !d.initial() {
		for _, t := range []*catalog.Table{d.old.Registry, d.old.Nodes, d.old.Periodic} {
			if t != nil {
				oldOwn[t.Name] = true
			}
		}
	}
	var names []string
	for _, t := range own {
		if t == nil {
			continue
		}
		switch {
		case d.now.Reference && (!d.old.Reference || !oldOwn[t.Name]):
			down := ""
			if oldOwn[t.Name] {
				down = r.Unreference(t) // a new table's drop undoes it
			}
			d.steps = append(d.steps, step{up: r.Reference(t), down: down, notInSchema: true})
			names = append(names, t.Name)
		case !d.now.Reference && oldOwn[t.Name]:
			d.steps = append(d.steps, step{up: r.Unreference(t), down: r.Reference(t), notInSchema: true})
			names = append(names, t.Name)
		}
	}
	if len(names) > 0 && d.now.Reference {
		d.note("", "make "+strings.Join(names, ", ")+" reference tables (a copy on every node of the cluster)")
	} else if len(names) > 0 {
		d.note("", "make "+strings.Join(names, ", ")+" tables of the coordinator again (no queue is distributed)")
	}
}

// createTable creates one of queuegen's own tables.
func (d *differ) createTable(t *catalog.Table, what string) {
	d.add(d.ddl.CreateTable(t), d.ddl.DropTable(t))
	d.note("create_"+t.Name, "create table "+t.Name+" ("+what+")")
}

func (d *differ) base() {
	ob, nb := d.old.Base, d.now.Base
	switch {
	case ob == nil && nb == nil:
	case ob == nil:
		d.add(d.ddl.CreateTable(nb), d.ddl.DropTable(nb))
		d.note("create_"+nb.Name, "create base table "+nb.Name)
	case nb == nil:
		// Dropped after the queues that inherit it (see diff).
	case ob.Name != nb.Name:
		d.refuse(fmt.Sprintf("base table %s → %s", ob.Name, nb.Name), "renaming the base table is not a change queuegen writes",
			manualPath+", e.g. ALTER TABLE "+ob.Name+" RENAME TO "+nb.Name)
	default:
		d.columns(ob, nb, "base table "+nb.Name)
	}
}

// buildTable creates a queue table (or an archive) with its default
// partition where it is partitioned, its trigger and its indexes (built in
// the migration's transaction: the table is new and empty). The first
// step creates the table; the default partition's is left out of the
// schema file.
func (d *differ) buildTable(t *catalog.Table) []step {
	out := []step{{up: d.ddl.CreateTable(t)}}
	if p, ok := d.ddl.(engine.Partitioner); ok && t.PartitionBy != "" {
		out = append(out, step{up: p.CreateDefaultPartition(t), notInSchema: true})
	}
	if t.NotifyTrigger != "" {
		out = append(out, step{up: d.ddl.CreateTrigger(t)})
	}
	for _, i := range t.Indexes {
		// An engine may declare every index in CREATE TABLE (CreateIndex
		// is then empty).
		if s := d.ddl.CreateIndex(t, i); !i.InTable() && s != "" {
			out = append(out, step{up: s})
		}
	}
	if r, ok := d.ddl.(engine.DistributedDDL); ok && t.Distribution != nil {
		// Last, so that the indexes are made on every shard.
		out = append(out, step{up: r.Distribute(t), notInSchema: true})
	}
	return out
}

// build adds buildTable's steps, undone by dropping the table.
func (d *differ) build(t *catalog.Table) {
	steps := d.buildTable(t)
	steps[0].down = d.ddl.DropTable(t)
	d.steps = append(d.steps, steps...)
}

// drop drops t, undone by building it again, empty: what drops a queue's
// table, its archive or its rate log; rows names what its rows were.
func (d *differ) drop(t *catalog.Table, what, rows string) {
	d.dropTable(t, "The "+what+" comes back empty: Down cannot bring back the "+rows+" Up dropped.")
}

// dropTable drops t, undone by building it again, empty, under a comment
// saying what Down cannot undo.
func (d *differ) dropTable(t *catalog.Table, comment string) {
	var ups []string
	for _, s := range d.buildTable(t) {
		ups = append(ups, s.up)
	}
	d.add(d.ddl.DropTable(t), "-- "+comment+"\n"+strings.Join(ups, "\n\n"))
}

func (d *differ) createQueue(q *catalog.Queue) {
	d.build(q.Table)
	d.addData(d.ddl.Register(q), d.ddl.Unregister(q.Name))
	d.note("create_"+q.Table.Name, fmt.Sprintf("add queue %s (table %s)", q.Name, q.Table.Name))
	if q.Archive != nil {
		d.createArchive(q)
	}
	if q.RateLog != nil {
		d.createRateLog(q)
	}
	if q.Backlog != nil {
		d.createBacklog(q, "")
	}
}

// createBacklog creates q's backlog, empty: pushes go there from now on,
// and the jobs already in the queue table are claimed from it as before.
// action names the migration ("" when the queue is new: its creation
// names it).
func (d *differ) createBacklog(q *catalog.Queue, action string) {
	d.build(q.Backlog)
	if n, ok := d.ddl.(engine.BacklogNumberer); ok && action != "" {
		d.addData(n.NumberAfter(q.Table.Name, q.Backlog.Name), "")
	}
	d.note(action, fmt.Sprintf("queue %s: pushes wait in backlog %s until a scheduler step moves them, fairly", q.Name, q.Backlog.Name))
}

// dropBacklog moves the jobs of oq's backlog into its queue table, where
// claims take them in order, and drops the backlog; Down makes it again,
// empty (the jobs stay in the queue table).
func (d *differ) dropBacklog(oq *catalog.Queue) {
	var cols []string
	for _, c := range oq.Table.RowColumns(d.old.Base) {
		cols = append(cols, c.Name)
	}
	comment := "The backlog comes back empty; the jobs Up moved stay in " + oq.Table.Name + ", where claims take them."
	if m, ok := d.ddl.(engine.BacklogDropper); ok {
		// The move drops the backlog itself; Down builds it again, and
		// numbers its jobs above the queue table's.
		var downs []string
		for _, s := range d.buildTable(oq.Backlog) {
			downs = append(downs, s.up)
		}
		if n, ok := d.ddl.(engine.BacklogNumberer); ok {
			downs = append(downs, n.NumberAfter(oq.Table.Name, oq.Backlog.Name))
		}
		d.add(m.MoveBacklog(oq.Backlog.Name, oq.Table.Name, cols), "-- "+comment+"\n"+strings.Join(downs, "\n\n"))
	} else {
		if m, ok := d.ddl.(engine.BacklogMover); ok {
			d.addData(m.MoveBacklog(oq.Backlog.Name, oq.Table.Name, cols), "")
		}
		d.dropTable(oq.Backlog, comment)
	}
	d.note("alter_"+oq.Table.Name, fmt.Sprintf("queue %s: move the jobs of backlog %s to table %s and drop it", oq.Name, oq.Backlog.Name, oq.Table.Name))
}

// alterBacklog creates, drops, renames or alters a queue's backlog (its
// indexes follow the queue's priority and fair_by, its trigger notify).
func (d *differ) alterBacklog(oq, nq *catalog.Queue) {
	switch {
	case oq.Backlog == nil && nq.Backlog == nil:
	case oq.Backlog == nil:
		d.createBacklog(nq, "alter_"+nq.Table.Name)
	case nq.Backlog == nil:
		d.dropBacklog(oq)
	default:
		ob, nb := d.renameSide("backlog", oq.Backlog, nq.Backlog), nq.Backlog
		label := "backlog " + nb.Name
		d.options(ob, nb, label)
		d.indexes(ob, nb, label)
		d.trigger(nq.Name+" (backlog "+nb.Name+")", ob, nb)
	}
}

// createRateLog creates q's rate log, empty.
func (d *differ) createRateLog(q *catalog.Queue) {
	d.build(q.RateLog)
	d.note("create_"+q.RateLog.Name, fmt.Sprintf("queue %s: a log of claims for its rate limit (table %s)", q.Name, q.RateLog.Name))
}

// dropRateLog drops oq's rate log. The log holds one window of claims and
// nothing else, so no --allow-drop is asked for: the next window starts
// empty.
func (d *differ) dropRateLog(oq *catalog.Queue) {
	d.drop(oq.RateLog, "rate log", "claims it logged")
	d.note("drop_"+oq.RateLog.Name, fmt.Sprintf("drop rate log %s of queue %s", oq.RateLog.Name, oq.Name))
}

// alterRateLog creates, drops, renames or rebuilds a queue's rate log.
// When its columns change (the limit becomes per key, or no longer is,
// or the key's type changes) the log is dropped and created again rather
// than altered: it holds only the current window's claims.
func (d *differ) alterRateLog(oq, nq *catalog.Queue) {
	o, n := oq.RateLog, nq.RateLog
	switch {
	case o == nil && n == nil:
	case o == nil:
		d.createRateLog(nq)
	case n == nil:
		d.dropRateLog(oq)
	case !sameColumns(o, n):
		d.dropRateLog(oq)
		d.createRateLog(nq)
	default:
		d.renameSide("rate log", o, n)
	}
}

// renameSide renames o, a table beside a queue's (its what: archive,
// rate log, backlog), to n's name when they differ, and returns a copy of
// o under its new names for the diff of the rest.
func (d *differ) renameSide(what string, o, n *catalog.Table) *catalog.Table {
	c := o.Clone()
	if o.Name != n.Name {
		d.renameTable(c, n.Name)
		d.note("rename_"+o.Name+"_to_"+n.Name, fmt.Sprintf("rename %s %s to %s", what, o.Name, n.Name))
	}
	return c
}

// sameColumns reports whether a and b have the same columns, in order
// (names, types, nullability and defaults).
func sameColumns(a, b *catalog.Table) bool {
	if len(a.Columns) != len(b.Columns) {
		return false
	}
	for i, c := range a.Columns {
		o := b.Columns[i]
		if c.Name != o.Name || c.Type != o.Type || c.NotNull != o.NotNull || c.Default != o.Default {
			return false
		}
	}
	return true
}

// createArchive creates q's archive table, empty.
func (d *differ) createArchive(q *catalog.Queue) {
	d.build(q.Archive)
	how := ""
	if q.Archive.PartitionBy != "" {
		how = ", partitioned by day"
	}
	d.note("create_"+q.Archive.Name, fmt.Sprintf("queue %s: archive completed jobs in table %s%s", q.Name, q.Archive.Name, how))
}

// dropArchive drops oq's archive and the jobs in it (allowed only with
// AllowDrop).
func (d *differ) dropArchive(oq *catalog.Queue, why string) {
	if !d.opts.AllowDrop {
		d.refuse("drop archive "+oq.Archive.Name, why+", and dropping it loses the jobs archived in it", allowDrop)
		return
	}
	d.drop(oq.Archive, "archive", "jobs")
	d.note("drop_"+oq.Archive.Name, fmt.Sprintf("drop archive %s of queue %s", oq.Archive.Name, oq.Name))
}

// alterArchive carries the queue table's changes to its archive: a
// rename, and every column change (the base table's too, since the
// archive holds its columns itself).
func (d *differ) alterArchive(oq, nq *catalog.Queue) {
	switch {
	case oq.Archive == nil && nq.Archive == nil:
	case oq.Archive == nil:
		d.createArchive(nq)
	case nq.Archive == nil:
		d.dropArchive(oq, fmt.Sprintf("queue %s no longer archives its completed jobs", nq.Name))
	default:
		oa, na := d.renameSide("archive", oq.Archive, nq.Archive), nq.Archive
		label := "archive " + na.Name
		d.columns(oa, na, label)
		d.indexes(oa, na, label)
	}
}

func (d *differ) dropQueue(oq *catalog.Queue) {
	if !d.opts.AllowDrop {
		d.refuse("drop queue "+oq.Name, fmt.Sprintf("the spec no longer has it, and dropping table %s loses its jobs", oq.Table.Name),
			allowDrop+"; if the queue was renamed, say so with renamed_from: "+oq.Name+" on the new queue")
		return
	}
	if oq.Archive != nil {
		d.dropArchive(oq, fmt.Sprintf("queue %s is dropped", oq.Name))
	}
	if oq.RateLog != nil {
		d.dropRateLog(oq)
	}
	if oq.Backlog != nil {
		// Before its parent, which cannot be dropped with a child.
		d.drop(oq.Backlog, "backlog", "jobs")
	}
	d.addData(d.ddl.Unregister(oq.Name), d.ddl.Register(oq))
	d.drop(oq.Table, "table", "jobs")
	d.note("drop_"+oq.Table.Name, fmt.Sprintf("drop queue %s (table %s)", oq.Name, oq.Table.Name))
}

func (d *differ) alterQueue(oq, nq *catalog.Queue) {
	ot, nt := oq.Table.Clone(), nq.Table
	label := "table " + nt.Name
	if od, nd := ot.Distribution, nt.Distribution; (od == nil) != (nd == nil) {
		what, why := "distribute added", "a distributed queue's table has a bucket in its primary key and its ids carry their bucket, so its rows, ids and keys would all have to be rewritten, and the table distributed while pushes and claims run"
		if nd == nil {
			what, why = "distribute removed", "the jobs of every bucket would have to be gathered onto the coordinator into a table of another shape (no bucket, a bigserial id), while pushes and claims run"
		}
		d.refuse(fmt.Sprintf("queue %s: %s", nq.Name, what), why,
			manualPath+": or create a new queue with the distribution you want, let the old one drain, and drop it")
		return
	} else if od != nil && od.Buckets != nd.Buckets {
		d.refuse(fmt.Sprintf("queue %s: distribute.buckets %d → %d", nq.Name, od.Buckets, nd.Buckets),
			"a job's bucket is its unique key's hash modulo the bucket count, so a new count would put new jobs of a key in another bucket than its unfinished ones (two jobs of one key), and workers walk only the buckets they know",
			"create a new queue with the bucket count you want, let the old one drain, and drop it")
		return
	}
	if ot.Inherits != nt.Inherits {
		d.refuse(fmt.Sprintf("queue %s: inherits %t → %t", nq.Name, ot.Inherits != "", nt.Inherits != ""),
			"moving a table into or out of INHERITS needs its rows copied to a new table",
			manualPath+": create the new table, copy the rows, drop the old one")
		return
	}
	if ot.Name != nt.Name {
		d.renameTable(ot, nt.Name)
		action := "rename_" + oq.Table.Name + "_to_" + nt.Name
		if oq.Name != nq.Name {
			action = "rename_" + oq.Name + "_to_" + nq.Name
		}
		d.note(action, fmt.Sprintf("rename table %s to %s", oq.Table.Name, nt.Name))
		if d.renamed == nil {
			d.renamed = map[string]bool{}
		}
		d.renamed[nt.Name] = true
	}
	if oq.Name != nq.Name || oq.Table.Name != nt.Name || oq.Mode != nq.Mode {
		d.addData(d.ddl.Reregister(oq, nq), d.ddl.Reregister(nq, oq))
		if oq.Name != nq.Name {
			d.note("rename_"+oq.Name+"_to_"+nq.Name, fmt.Sprintf("rename queue %s to %s", oq.Name, nq.Name))
		}
		if oq.Mode != nq.Mode {
			d.note("alter_"+nt.Name, fmt.Sprintf("queue %s: mode %s → %s", nq.Name, oq.Mode, nq.Mode))
		}
		if oq.Mode == "lease" && nq.Mode != "lease" {
			// No transaction-mode statement reads a running job: one left
			// leased would stay so. Its attempt stays counted.
			d.addData(d.ddl.ReleaseLeases(nt), "")
			d.note("", fmt.Sprintf("queue %s: leased jobs made available again (transaction mode reads no running job)", nq.Name))
		}
	}
	add := d.checks(ot, nt, label) // a check goes before its column, and comes after it
	d.columns(ot, nt, label)
	add()
	d.options(ot, nt, label)
	d.indexes(ot, nt, label)
	d.alterArchive(oq, nq)
	d.alterRateLog(oq, nq)
	d.alterBacklog(oq, nq)
	d.trigger(nq.Name, ot, nt)
}

// trigger creates or drops table nt's notify trigger (ot is the table as
// it was); label names the queue (and the table, when not the queue's).
func (d *differ) trigger(label string, ot, nt *catalog.Table) {
	switch {
	case ot.NotifyTrigger == nt.NotifyTrigger:
	case ot.NotifyTrigger == "":
		d.add(d.ddl.CreateTrigger(nt), d.ddl.DropTrigger(nt, nt.NotifyTrigger))
		d.note("alter_"+nt.Name, fmt.Sprintf("queue %s: notify on push", label))
	case nt.NotifyTrigger == "":
		d.add(d.ddl.DropTrigger(nt, ot.NotifyTrigger), d.ddl.CreateTrigger(ot))
		d.note("alter_"+nt.Name, fmt.Sprintf("queue %s: no longer notify on push", label))
	}
}

// renameTable renames the table and the indexes, constraints, sequence and
// trigger named after it, and updates ot to the new names.
func (d *differ) renameTable(ot *catalog.Table, newName string) {
	oldName := ot.Name
	d.add(d.ddl.RenameTable(oldName, newName), d.ddl.RenameTable(newName, oldName))
	rename := func(n string) (string, bool) {
		if rest, ok := strings.CutPrefix(n, oldName+"_"); ok {
			return newName + "_" + rest, true
		}
		return n, false
	}
	for _, i := range ot.Indexes {
		nn, ok := rename(i.Name)
		if !ok {
			continue
		}
		if i.InTable() {
			d.add(d.ddl.RenameConstraint(newName, i.Name, nn), d.ddl.RenameConstraint(newName, nn, i.Name))
		} else {
			d.add(d.ddl.RenameIndex(newName, i.Name, nn), d.ddl.RenameIndex(newName, nn, i.Name))
		}
		i.Name = nn
	}
	// A standalone table owns its id sequence, named after the table.
	if ot.Inherits == "" {
		if id := ot.Column("id"); id != nil && (id.Type == "bigserial" || ot.Distribution != nil) {
			d.add(d.ddl.RenameSequence(oldName+"_id_seq", newName+"_id_seq"), d.ddl.RenameSequence(newName+"_id_seq", oldName+"_id_seq"))
		}
	}
	if ot.NotifyTrigger != "" {
		nn, _ := rename(ot.NotifyTrigger)
		d.add(d.ddl.RenameTrigger(newName, ot.NotifyTrigger, nn), d.ddl.RenameTrigger(newName, nn, ot.NotifyTrigger))
		ot.NotifyTrigger = nn
	}
	for _, k := range ot.Checks {
		if nn, ok := rename(k.Name); ok {
			d.add(d.ddl.RenameConstraint(newName, k.Name, nn), d.ddl.RenameConstraint(newName, nn, k.Name))
			k.Name = nn
		}
	}
	if _, ok := d.ddl.(engine.Partitioner); ok && ot.PartitionBy != "" {
		od, nd := ot.DefaultPartition(), newName+"_default"
		d.add(d.ddl.RenameTable(od, nd), d.ddl.RenameTable(nd, od))
	}
	ot.Name = newName
}

// columns diffs a table's own columns.
func (d *differ) columns(ot, nt *catalog.Table, label string) {
	oldBy := map[string]*catalog.Column{}
	for _, c := range ot.Columns {
		oldBy[c.Name] = c
	}
	nowNames := map[string]bool{}
	for _, c := range nt.Columns {
		nowNames[c.Name] = true
	}
	seen := map[string]bool{}
	for _, nc := range nt.Columns {
		oc := oldBy[nc.Name]
		if oc == nil && nc.RenamedFrom != "" && !nowNames[nc.RenamedFrom] && oldBy[nc.RenamedFrom] != nil {
			oc = oldBy[nc.RenamedFrom]
			d.add(d.ddl.RenameColumn(nt, oc.Name, nc.Name), d.ddl.RenameColumn(nt, nc.Name, oc.Name))
			d.note("alter_"+ot.Name, fmt.Sprintf("%s: rename column %s to %s", label, oc.Name, nc.Name))
		}
		if oc == nil {
			d.addColumn(ot.Name, nt, nc, label)
			continue
		}
		seen[oc.Name] = true
		d.alterColumn(ot.Name, nt, oc, nc, label)
	}
	for _, oc := range ot.Columns {
		if seen[oc.Name] {
			continue
		}
		what := fmt.Sprintf("%s: drop column %s", label, oc.Name)
		if !d.opts.AllowDrop {
			d.refuse(what, "the spec no longer has it, and dropping a column loses its data",
				allowDrop+"; if it was renamed, say so with renamed_from: "+oc.Name+" on the new column")
			continue
		}
		back := *oc
		back.NotNull = false
		d.add(d.ddl.DropColumn(nt, oc.Name),
			"-- The column comes back empty: Down cannot bring back the values Up dropped.\n"+d.ddl.AddColumn(nt, &back))
		d.note("alter_"+ot.Name, what)
	}
}

func (d *differ) addColumn(oldName string, t *catalog.Table, c *catalog.Column, label string) {
	what := fmt.Sprintf("%s: add column %s %s", label, c.Name, c.Type)
	if c.NotNull && c.Default == "" {
		d.refuse(what+" NOT NULL", "rows already in the table would have no value for it",
			"give it a default in the spec (default: …; it can be removed in a later change), or make it nullable (nullable: true)")
		return
	}
	if why := d.ddl.AddRewrites(c); why != "" {
		d.refuse(what, why, manualPath+"; or add it nullable first, backfill it in batches, then set the default")
		return
	}
	d.add(d.ddl.AddColumn(t, c), d.ddl.DropColumn(t, c.Name))
	d.note("alter_"+oldName, what)
}

func (d *differ) alterColumn(oldName string, t *catalog.Table, oc, nc *catalog.Column, label string) {
	if oc.Type != nc.Type {
		what := fmt.Sprintf("%s: column %s type %s → %s", label, nc.Name, oc.Type, nc.Type)
		if ok, why := d.ddl.Widens(oc.Type, nc.Type); !ok {
			d.refuse(what, why, manualPath+"; for a large queue, add a new column, backfill it in batches, then switch")
		} else {
			back := *nc
			back.Type = oc.Type
			d.add(d.ddl.ChangeType(t, nc, oc.Type), d.ddl.ChangeType(t, &back, nc.Type))
			d.note("alter_"+oldName, what)
		}
	}
	switch {
	case oc.NotNull && !nc.NotNull:
		d.add(d.ddl.DropNotNull(t, nc.Name), d.ddl.SetNotNull(t, nc.Name))
		d.note("alter_"+oldName, fmt.Sprintf("%s: column %s becomes nullable", label, nc.Name))
	case !oc.NotNull && nc.NotNull:
		d.refuse(fmt.Sprintf("%s: column %s becomes NOT NULL", label, nc.Name), "rows already in the table may hold NULL there",
			manualPath+": UPDATE the NULLs to a value, then ALTER TABLE … ALTER COLUMN "+nc.Name+" SET NOT NULL")
	}
	if oc.Default != nc.Default {
		set := func(def string) string {
			if def == "" {
				return d.ddl.DropDefault(t, nc.Name)
			}
			return d.ddl.SetDefault(t, nc.Name, def)
		}
		d.add(set(nc.Default), set(oc.Default))
		d.note("alter_"+oldName, fmt.Sprintf("%s: column %s default %s → %s", label, nc.Name, orNone(oc.Default), orNone(nc.Default)))
	}
}

// options sets and resets storage options.
func (d *differ) options(ot, nt *catalog.Table, label string) {
	old := map[string]string{}
	for _, o := range ot.Options {
		old[o.Name] = o.Value
	}
	var set, undoSet []catalog.Option
	var reset, undoReset []string
	for _, o := range nt.Options {
		prev, had := old[o.Name]
		delete(old, o.Name)
		switch {
		case had && prev == o.Value:
			continue
		case had:
			undoSet = append(undoSet, catalog.Option{Name: o.Name, Value: prev})
		default:
			undoReset = append(undoReset, o.Name)
		}
		set = append(set, o)
	}
	for _, name := range slices.Sorted(maps.Keys(old)) {
		reset = append(reset, name)
		undoSet = append(undoSet, catalog.Option{Name: name, Value: old[name]})
	}
	if len(set)+len(reset) == 0 {
		return
	}
	statements := func(set []catalog.Option, reset []string) string {
		var out []string
		if len(set) > 0 {
			out = append(out, d.ddl.SetOptions(nt, set))
		}
		if len(reset) > 0 {
			out = append(out, d.ddl.ResetOptions(nt, reset))
		}
		return strings.Join(out, "\n")
	}
	d.add("-- Storage options: catalog only, no rewrite.\n"+statements(set, reset), statements(undoSet, undoReset))
	var parts []string
	if len(set) > 0 {
		names := make([]string, len(set))
		for i, o := range set {
			names[i] = o.Name
		}
		parts = append(parts, "set "+strings.Join(names, ", "))
	}
	if len(reset) > 0 {
		parts = append(parts, "reset "+strings.Join(reset, ", "))
	}
	d.note("alter_"+nt.Name, fmt.Sprintf("%s: storage parameters: %s", label, strings.Join(parts, "; ")))
}

// checks drops the CHECK constraints of ot that nt does not have (the
// same name and definition), and returns the step that adds those of nt
// that ot does not have, to run after the columns change: a check is
// dropped before its column, and added after it. With a DDL that cannot
// change checks (not an engine.CheckChanger), any difference is refused.
func (d *differ) checks(ot, nt *catalog.Table, label string) (add func()) {
	key := func(k *catalog.Check) string { return fmt.Sprintf("%s %s %t", k.Name, k.Expr, k.NoInherit) }
	var want, have []string
	for _, k := range nt.Checks {
		want = append(want, key(k))
	}
	for _, k := range ot.Checks {
		have = append(have, key(k))
	}
	if slices.Equal(want, have) {
		return func() {}
	}
	cc, ok := d.ddl.(engine.CheckChanger)
	if !ok {
		d.refuse(label+": CHECK constraints differ", "queuegen does not change CHECK constraints", manualPath)
		return func() {}
	}
	for _, k := range ot.Checks {
		if !slices.Contains(want, key(k)) {
			d.add(cc.DropCheck(nt, k.Name), cc.AddCheck(nt, k))
			d.note("alter_"+ot.Name, fmt.Sprintf("%s: drop check %s", label, k.Name))
		}
	}
	return func() {
		for _, k := range nt.Checks {
			if !slices.Contains(have, key(k)) {
				d.add(cc.AddCheck(nt, k), cc.DropCheck(nt, k.Name))
				d.note("alter_"+ot.Name, fmt.Sprintf("%s: add check %s", label, k.Name))
			}
		}
	}
}

// indexes diffs a table's indexes. The table exists and may be large and
// busy, so indexes are built and dropped online (no lock that blocks
// pushes and claims); an index whose definition changes is built under a
// temporary name first and swapped in, so claims never run without it.
func (d *differ) indexes(ot, nt *catalog.Table, label string) {
	oldBy := map[string]*catalog.Index{}
	for _, i := range ot.Indexes {
		oldBy[i.Name] = i
	}
	newNames := map[string]bool{}
	for _, ni := range nt.Indexes {
		newNames[ni.Name] = true
		oi := oldBy[ni.Name]
		switch {
		case oi == nil:
			d.addOnline(d.ddl.CreateIndexOnline(nt, ni), d.ddl.DropIndexOnline(nt, ni.Name))
			d.note("alter_"+nt.Name, fmt.Sprintf("%s: add index %s", label, ni.Name))
		case !oi.SameDefinition(ni):
			if oi.InTable() || ni.InTable() {
				d.refuse(label+": primary key changes", "queuegen does not change primary keys or constraints", manualPath)
				continue
			}
			tmp := tempName(ni.Name, d.ddl.MaxIdentifier())
			swap := func(from, to *catalog.Index) string {
				build := *to
				build.Name = tmp
				return d.ddl.CreateIndexOnline(nt, &build) + "\n" + d.ddl.DropIndexOnline(nt, from.Name) + "\n" + d.ddl.RenameIndexOnline(nt.Name, tmp, to.Name)
			}
			d.addOnline(swap(oi, ni), swap(ni, oi))
			where := ""
			if ni.Where != "" {
				where = " WHERE " + ni.Where
			}
			d.note("alter_"+nt.Name, fmt.Sprintf("%s: change index %s to (%s)%s", label, ni.Name, strings.Join(ni.Columns, ", "), where))
		}
	}
	for _, oi := range ot.Indexes {
		if !newNames[oi.Name] {
			d.addOnline(d.ddl.DropIndexOnline(nt, oi.Name), d.ddl.CreateIndexOnline(nt, oi))
			d.note("alter_"+nt.Name, fmt.Sprintf("%s: drop index %s", label, oi.Name))
		}
	}
}

func tempName(name string, max int) string {
	const suffix = "_next"
	if len(name)+len(suffix) > max {
		name = name[:max-len(suffix)]
	}
	return name + suffix
}

// name is the migration file's name: its first actions, joined, or
// queuegen_init for the first migration.
func (d *differ) name() string {
	if d.initial() {
		return "queuegen_init"
	}
	name := ""
	for i, a := range d.actions {
		next := a
		if i > 0 {
			next = name + "_" + a
		}
		if len(next) > 60 {
			return name + "_and_more"
		}
		name = next
	}
	return name
}

func orNone(def string) string {
	if def == "" {
		return "none"
	}
	return def
}

// Schema is the statements that create the whole catalog, without the
// registry rows: the schema file sqlc compiles the queries against.
func Schema(c *catalog.Catalog, ddl engine.DDL) []string {
	d := &differ{old: &catalog.Catalog{Schema: c.Schema}, now: c, ddl: ddl, opts: Options{}}
	d.diff()
	var out []string
	for _, s := range d.steps {
		if !s.notInSchema {
			out = append(out, s.up)
		}
	}
	return out
}
