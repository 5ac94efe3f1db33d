package evolve

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/queuegen/queuegen/internal/model"
	"github.com/queuegen/queuegen/internal/render"
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
	// Summary is one line per change, for the file header.
	Summary []string
	// NoTransaction is true when the migration builds or drops indexes
	// CONCURRENTLY on existing tables, which cannot run in a transaction.
	// Such a migration holds nothing else, and each of its statements can
	// run again, so a failed run can be re-run.
	NoTransaction bool
	// Up and Down are the statements, each with its comment, in order.
	Up, Down []string
}

// Refusal is a spec change Diff will not express as a migration.
type Refusal struct {
	What, Why, Manual string
}

// RefusedError lists every refused change. Nothing is generated.
type RefusedError struct{ Refusals []Refusal }

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

// Diff compares the recorded state with the spec's model and returns the
// migrations that take a database from one to the other: none when they
// agree, one in a transaction, or (when indexes on existing tables change)
// that one followed by a NO TRANSACTION one that only builds and drops
// indexes CONCURRENTLY.
func Diff(old *State, m *model.Model, opts Options) ([]*Change, error) {
	d := &differ{old: old, m: m, opts: opts, schema: m.Schema}
	d.diff()
	if len(d.refusals) > 0 {
		return nil, &RefusedError{Refusals: d.refusals}
	}
	var tx, conc []step
	for _, s := range d.steps {
		if s.concurrent {
			conc = append(conc, s)
		} else {
			tx = append(tx, s)
		}
	}
	name := d.name()
	var changes []*Change
	if len(tx) > 0 {
		changes = append(changes, change(name, d.summary, tx, false))
	}
	if len(conc) > 0 {
		if len(tx) > 0 {
			name += "_indexes"
		}
		changes = append(changes, change(name, d.summary, conc, true))
	}
	return changes, nil
}

func change(name string, summary []string, steps []step, noTx bool) *Change {
	c := &Change{Name: name, Summary: summary, NoTransaction: noTx}
	for _, s := range steps {
		c.Up = append(c.Up, s.up)
	}
	for i := len(steps) - 1; i >= 0; i-- {
		c.Down = append(c.Down, steps[i].down)
	}
	return c
}

type step struct {
	up, down   string
	concurrent bool
}

type differ struct {
	renamed  map[string]bool // new names of renamed tables
	old      *State
	m        *model.Model
	opts     Options
	schema   string
	steps    []step
	summary  []string
	actions  []string
	refusals []Refusal
}

func (d *differ) q(name string) string {
	if d.schema != "public" {
		return d.schema + "." + name
	}
	return name
}

func (d *differ) add(up, down string) { d.steps = append(d.steps, step{up: up, down: down}) }

func (d *differ) addConcurrent(up, down string) {
	d.steps = append(d.steps, step{up: up, down: down, concurrent: true})
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
const manualPath = "write this migration by hand: run `queuegen generate --manual` for a new migration file to fill in (the spec's schema is recorded as its result)"

func (d *differ) diff() {
	if d.old.Schema != d.m.Schema {
		d.refuse(fmt.Sprintf("schema %s → %s", d.old.Schema, d.m.Schema),
			"moving every table to another schema is not a change queuegen writes", manualPath+", e.g. ALTER TABLE … SET SCHEMA for each table")
		return
	}
	if d.m.Periodic != "" && !d.old.PeriodicTable {
		d.add(render.PeriodicDDL(d.m.Periodic), "DROP TABLE "+d.m.Periodic+";")
		d.note("create_"+model.PeriodicTable, "create table "+model.PeriodicTable+" (periodic jobs)")
	}
	hadFunction := slices.Contains(d.old.Functions, model.NotifyFunction)
	if d.m.NotifyFunction != "" && !hadFunction {
		d.add(d.block("notify_function", d.m.NotifyFunction), "DROP FUNCTION "+d.m.NotifyFunction+"();")
		d.note("create_"+model.NotifyFunction, "create function "+model.NotifyFunction+" (push notifications)")
	}
	d.base()
	matched := map[string]bool{}
	oldByName := map[string]*Queue{}
	for _, q := range d.old.Queues {
		oldByName[q.Name] = q
	}
	newNames := map[string]bool{}
	for _, q := range d.m.Queues {
		newNames[q.Name] = true
	}
	for _, nq := range d.m.Queues {
		oq := oldByName[nq.Name]
		if oq == nil && nq.Spec.RenamedFrom != "" && !newNames[nq.Spec.RenamedFrom] {
			oq = oldByName[nq.Spec.RenamedFrom]
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
	if d.m.NotifyFunction == "" && hadFunction {
		d.add("DROP FUNCTION "+d.q(model.NotifyFunction)+"();", d.block("notify_function", d.q(model.NotifyFunction)))
		d.note("drop_"+model.NotifyFunction, "drop function "+model.NotifyFunction+" (no queue notifies)")
	}
	if d.m.Periodic == "" && d.old.PeriodicTable {
		d.add("DROP TABLE "+d.q(model.PeriodicTable)+";", render.PeriodicDDL(d.q(model.PeriodicTable)))
		d.note("drop_"+model.PeriodicTable, "drop table "+model.PeriodicTable+" (no periodic jobs left)")
	}
	if d.old.Base != nil && d.m.Base == nil {
		if !d.opts.AllowDrop {
			d.refuse("drop base table "+d.old.Base.Name, "no queue inherits it any more, and dropping a table loses its rows",
				"run queuegen generate --allow-drop to drop it")
			return
		}
		d.add("DROP TABLE "+d.q(d.old.Base.Name)+";", d.createTableSQL(toModel(d.old.Base, d.schema, nil), false))
		d.note("drop_"+d.old.Base.Name, "drop base table "+d.old.Base.Name)
	}
}

func (d *differ) base() {
	ob, nb := d.old.Base, d.m.Base
	switch {
	case ob == nil && nb == nil:
	case ob == nil:
		d.add(d.createTableSQL(nb, false), "DROP TABLE "+nb.QName+";")
		d.note("create_"+nb.Name, "create base table "+nb.Name)
	case nb == nil:
		// Dropped after the queues that inherit it (see diff).
	case ob.Name != nb.Name:
		d.refuse(fmt.Sprintf("base table %s → %s", ob.Name, nb.Name), "renaming the base table is not a change queuegen writes",
			manualPath+", e.g. ALTER TABLE "+d.q(ob.Name)+" RENAME TO "+nb.Name)
	default:
		d.columns(ob.Name, nb.QName, ob.Columns, nb.Own, "base table "+nb.Name)
	}
}

func (d *differ) block(name string, data any) string {
	s, err := render.Block(name, data)
	if err != nil {
		panic(err) // the templates are fixed and tested; a failure is a bug
	}
	return s
}

// createTableSQL renders CREATE TABLE and its indexes. On a new table the
// indexes are built in the same transaction (the table is empty).
func (d *differ) createTableSQL(t *model.Table, withIndexes bool) string {
	create, err := render.CreateTable(t)
	if err != nil {
		panic(err) // the templates are fixed and tested; a failure is a bug
	}
	if !withIndexes {
		return create
	}
	idx, err := render.CreateIndexes(t)
	if err != nil {
		panic(err)
	}
	if idx == "" {
		return create
	}
	return create + "\n\n" + idx
}

func (d *differ) registryInsert(q *model.Queue) string {
	return fmt.Sprintf("INSERT INTO %s (name, table_name, mode)\nVALUES ('%s', '%s', '%s');", d.q(registryTable), q.Name, q.Table.Name, q.Spec.Mode)
}

func (d *differ) registryDelete(name string) string {
	return fmt.Sprintf("DELETE FROM %s WHERE name = '%s';", d.q(registryTable), name)
}

func (d *differ) createQueue(q *model.Queue) {
	d.add("-- Queue "+q.Name+": "+q.ModeDescription+".\n"+d.createTableSQL(q.Table, true)+"\n\n"+d.registryInsert(q),
		d.registryDelete(q.Name)+"\nDROP TABLE "+q.Table.QName+";")
	d.note("create_"+q.Table.Name, fmt.Sprintf("add queue %s (table %s)", q.Name, q.Table.Name))
}

func (d *differ) dropQueue(oq *Queue) {
	if !d.opts.AllowDrop {
		d.refuse("drop queue "+oq.Name, fmt.Sprintf("the spec no longer has it, and dropping table %s loses its jobs", oq.Table.Name),
			"run queuegen generate --allow-drop to drop it; if the queue was renamed, say so with renamed_from: "+oq.Name+" on the new queue")
		return
	}
	var parent *model.Table
	if oq.Table.Inherits != "" && d.old.Base != nil {
		parent = toModel(d.old.Base, d.schema, nil)
	}
	t := toModel(oq.Table, d.schema, parent)
	d.add(d.registryDelete(oq.Name)+"\nDROP TABLE "+t.QName+";",
		"-- The table comes back empty: Down cannot bring back the jobs Up dropped.\n"+d.createTableSQL(t, true)+"\n\n"+
			fmt.Sprintf("INSERT INTO %s (name, table_name, mode)\nVALUES ('%s', '%s', '%s');", d.q(registryTable), oq.Name, oq.Table.Name, oq.Mode))
	d.note("drop_"+oq.Table.Name, fmt.Sprintf("drop queue %s (table %s)", oq.Name, oq.Table.Name))
}

func (d *differ) alterQueue(oq *Queue, nq *model.Queue) {
	ot, nt := cloneTable(oq.Table), nq.Table
	label := "table " + nt.Name
	newInherits := ""
	if nt.Parent != nil {
		newInherits = nt.Parent.Name
	}
	if ot.Inherits != newInherits {
		d.refuse(fmt.Sprintf("queue %s: inherits %t → %t", nq.Name, ot.Inherits != "", newInherits != ""),
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
	if oq.Name != nq.Name || oq.Table.Name != nt.Name || oq.Mode != string(nq.Spec.Mode) {
		d.add(fmt.Sprintf("UPDATE %s\nSET name = '%s', table_name = '%s', mode = '%s'\nWHERE name = '%s';", d.q(registryTable), nq.Name, nt.Name, nq.Spec.Mode, oq.Name),
			fmt.Sprintf("UPDATE %s\nSET name = '%s', table_name = '%s', mode = '%s'\nWHERE name = '%s';", d.q(registryTable), oq.Name, oq.Table.Name, oq.Mode, nq.Name))
		if oq.Name != nq.Name {
			d.note("rename_"+oq.Name+"_to_"+nq.Name, fmt.Sprintf("rename queue %s to %s", oq.Name, nq.Name))
		}
		if oq.Mode != string(nq.Spec.Mode) {
			d.note("alter_"+nt.Name, fmt.Sprintf("queue %s: mode %s → %s", nq.Name, oq.Mode, nq.Spec.Mode))
		}
	}
	d.columns(ot.Name, nt.QName, ot.Columns, nt.Own, label)
	d.checks(ot, nt, label)
	d.options(ot, nt, label)
	d.indexes(ot, nt, label)
	switch {
	case ot.NotifyTrigger == nt.NotifyTrigger:
	case ot.NotifyTrigger == "":
		d.add(d.block("notify_trigger", nt), fmt.Sprintf("DROP TRIGGER IF EXISTS %s ON %s;", nt.NotifyTrigger, nt.QName))
		d.note("alter_"+nt.Name, fmt.Sprintf("queue %s: notify on push", nq.Name))
	case nt.NotifyTrigger == "":
		d.add(fmt.Sprintf("DROP TRIGGER IF EXISTS %s ON %s;", ot.NotifyTrigger, nt.QName), d.block("notify_trigger", toModel(ot, d.schema, nil)))
		d.note("alter_"+nt.Name, fmt.Sprintf("queue %s: no longer notify on push", nq.Name))
	}
}

func cloneTable(t *Table) *Table {
	c := *t
	c.Columns = slices.Clone(t.Columns)
	c.Checks = nil
	for _, k := range t.Checks {
		k2 := *k
		c.Checks = append(c.Checks, &k2)
	}
	c.Indexes = nil
	for _, i := range t.Indexes {
		i2 := *i
		c.Indexes = append(c.Indexes, &i2)
	}
	return &c
}

// renameTable renames the table and the indexes and constraints named
// after it, and updates ot to the new names.
func (d *differ) renameTable(ot *Table, newName string) {
	oldName := ot.Name
	d.add(fmt.Sprintf("ALTER TABLE %s RENAME TO %s;", d.q(oldName), newName), fmt.Sprintf("ALTER TABLE %s RENAME TO %s;", d.q(newName), oldName))
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
		if i.Primary {
			d.add(fmt.Sprintf("ALTER TABLE %s RENAME CONSTRAINT %s TO %s;", d.q(newName), i.Name, nn),
				fmt.Sprintf("ALTER TABLE %s RENAME CONSTRAINT %s TO %s;", d.q(newName), nn, i.Name))
		} else {
			d.add(fmt.Sprintf("ALTER INDEX %s RENAME TO %s;", d.q(i.Name), nn), fmt.Sprintf("ALTER INDEX %s RENAME TO %s;", d.q(nn), i.Name))
		}
		i.Name = nn
	}
	// A standalone table owns its id sequence, named after the table.
	if ot.Inherits == "" && slices.ContainsFunc(ot.Columns, func(c *Column) bool { return c.Name == "id" && c.Type == "bigserial" }) {
		d.add(fmt.Sprintf("ALTER SEQUENCE %s RENAME TO %s;", d.q(oldName+"_id_seq"), newName+"_id_seq"),
			fmt.Sprintf("ALTER SEQUENCE %s RENAME TO %s;", d.q(newName+"_id_seq"), oldName+"_id_seq"))
	}
	if ot.NotifyTrigger != "" {
		nn, _ := rename(ot.NotifyTrigger)
		d.add(fmt.Sprintf("ALTER TRIGGER %s ON %s RENAME TO %s;", ot.NotifyTrigger, d.q(newName), nn),
			fmt.Sprintf("ALTER TRIGGER %s ON %s RENAME TO %s;", nn, d.q(newName), ot.NotifyTrigger))
		ot.NotifyTrigger = nn
	}
	for _, k := range ot.Checks {
		if nn, ok := rename(k.Name); ok {
			d.add(fmt.Sprintf("ALTER TABLE %s RENAME CONSTRAINT %s TO %s;", d.q(newName), k.Name, nn),
				fmt.Sprintf("ALTER TABLE %s RENAME CONSTRAINT %s TO %s;", d.q(newName), nn, k.Name))
			k.Name = nn
		}
	}
	ot.Name = newName
}

// columns diffs a table's own columns. ALTER TABLE without ONLY reaches the
// children of an INHERITS parent, so a base column change is one statement.
func (d *differ) columns(tableName, qname string, old []*Column, now []*model.Column, label string) {
	oldBy := map[string]*Column{}
	for _, c := range old {
		oldBy[c.Name] = c
	}
	nowNames := map[string]bool{}
	for _, c := range now {
		nowNames[c.Name] = true
	}
	seen := map[string]bool{}
	for _, nc := range now {
		oc := oldBy[nc.Name]
		if oc == nil && nc.RenamedFrom != "" && !nowNames[nc.RenamedFrom] && oldBy[nc.RenamedFrom] != nil {
			oc = oldBy[nc.RenamedFrom]
			d.add(fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s;", qname, oc.Name, nc.Name),
				fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s;", qname, nc.Name, oc.Name))
			d.note("alter_"+tableName, fmt.Sprintf("%s: rename column %s to %s", label, oc.Name, nc.Name))
		}
		if oc == nil {
			d.addColumn(tableName, qname, nc, label)
			continue
		}
		seen[oc.Name] = true
		d.alterColumn(tableName, qname, oc, nc, label)
	}
	for _, oc := range old {
		if seen[oc.Name] {
			continue
		}
		what := fmt.Sprintf("%s: drop column %s", label, oc.Name)
		if !d.opts.AllowDrop {
			d.refuse(what, "the spec no longer has it, and dropping a column loses its data",
				"run queuegen generate --allow-drop to drop it; if it was renamed, say so with renamed_from: "+oc.Name+" on the new column")
			continue
		}
		d.add(fmt.Sprintf("ALTER TABLE %s DROP COLUMN IF EXISTS %s;", qname, oc.Name),
			fmt.Sprintf("-- The column comes back empty: Down cannot bring back the values Up dropped.\nALTER TABLE %s ADD COLUMN IF NOT EXISTS %s;", qname, columnDef(oc.Name, oc.Type, false, oc.Default)))
		d.note("alter_"+tableName, what)
	}
}

func columnDef(name, typ string, notNull bool, def string) string {
	s := name + " " + typ
	if notNull {
		s += " NOT NULL"
	}
	if def != "" {
		s += " DEFAULT " + def
	}
	return s
}

func (d *differ) addColumn(tableName, qname string, c *model.Column, label string) {
	what := fmt.Sprintf("%s: add column %s %s", label, c.Name, c.SQLType)
	if c.NotNull && c.Default == "" {
		d.refuse(what+" NOT NULL", "rows already in the table would have no value for it",
			"give it a default in the spec (default: …; it can be removed in a later change), or make it nullable (nullable: true)")
		return
	}
	d.add(fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s;", qname, columnDef(c.Name, c.SQLType, c.NotNull, c.Default)),
		fmt.Sprintf("ALTER TABLE %s DROP COLUMN IF EXISTS %s;", qname, c.Name))
	d.note("alter_"+tableName, what)
}

func (d *differ) alterColumn(tableName, qname string, oc *Column, nc *model.Column, label string) {
	col := fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s", qname, nc.Name)
	if oc.Type != nc.SQLType {
		what := fmt.Sprintf("%s: column %s type %s → %s", label, nc.Name, oc.Type, nc.SQLType)
		if !widensInPlace(oc.Type, nc.SQLType) {
			d.refuse(what, "PostgreSQL cannot make this change in place: it would rewrite the table under an exclusive lock, or fail on existing values",
				manualPath+"; for a large queue, add a new column, backfill it in batches, then switch")
		} else {
			d.add(fmt.Sprintf("-- Widening: PostgreSQL changes the type in place, without rewriting the table.\n%s TYPE %s;", col, nc.SQLType),
				fmt.Sprintf("-- Narrowing back fails if a value no longer fits %s.\n%s TYPE %s;", oc.Type, col, oc.Type))
			d.note("alter_"+tableName, what)
		}
	}
	switch {
	case oc.NotNull && !nc.NotNull:
		d.add(col+" DROP NOT NULL;", "-- Fails if NULLs were stored meanwhile.\n"+col+" SET NOT NULL;")
		d.note("alter_"+tableName, fmt.Sprintf("%s: column %s becomes nullable", label, nc.Name))
	case !oc.NotNull && nc.NotNull:
		d.refuse(fmt.Sprintf("%s: column %s becomes NOT NULL", label, nc.Name), "rows already in the table may hold NULL there",
			manualPath+": UPDATE the NULLs to a value, then ALTER TABLE … ALTER COLUMN "+nc.Name+" SET NOT NULL")
	}
	if oc.Default != nc.Default {
		set := func(def string) string {
			if def == "" {
				return col + " DROP DEFAULT;"
			}
			return col + " SET DEFAULT " + def + ";"
		}
		d.add(set(nc.Default), set(oc.Default))
		d.note("alter_"+tableName, fmt.Sprintf("%s: column %s default %s → %s", label, nc.Name, orNone(oc.Default), orNone(nc.Default)))
	}
}

var modRE = regexp.MustCompile(`^([a-z ]+)(?:\((\d+)(?:, (\d+))?\))?(\[\])?$`)

// widensInPlace reports whether PostgreSQL changes type from to type to
// without rewriting the table or checking the rows: a longer varchar,
// varchar to text, a wider numeric of the same scale, or any numeric to
// unconstrained numeric. Same for arrays of these.
func widensInPlace(from, to string) bool {
	f, t := modRE.FindStringSubmatch(from), modRE.FindStringSubmatch(to)
	if f == nil || t == nil || f[4] != t[4] {
		return false
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	switch {
	case f[1] == "varchar" && t[1] == "text":
		return true
	case f[1] == "varchar" && t[1] == "varchar":
		return num(t[2]) >= num(f[2])
	case f[1] == "numeric" && t[1] == "numeric":
		if t[2] == "" {
			return true
		}
		return f[2] != "" && num(t[2]) >= num(f[2]) && num(t[3]) == num(f[3])
	}
	return false
}

// options sets and resets storage parameters; ALTER TABLE … SET changes
// only the catalog (a brief lock, no rewrite).
func (d *differ) options(ot *Table, nt *model.Table, label string) {
	old := map[string]string{}
	for _, o := range ot.Options {
		name, value, _ := strings.Cut(o, "=")
		old[name] = value
	}
	var set, reset, undoSet, undoReset []string
	for _, o := range nt.Options {
		prev, had := old[o.Name]
		delete(old, o.Name)
		switch {
		case had && prev == o.Value:
			continue
		case had:
			undoSet = append(undoSet, o.Name+" = "+prev)
		default:
			undoReset = append(undoReset, o.Name)
		}
		set = append(set, o.Name+" = "+o.Value)
	}
	for _, name := range slices.Sorted(maps.Keys(old)) {
		reset = append(reset, name)
		undoSet = append(undoSet, name+" = "+old[name])
	}
	if len(set)+len(reset) == 0 {
		return
	}
	alter := func(verb string, items []string) []string {
		if len(items) == 0 {
			return nil
		}
		return []string{fmt.Sprintf("ALTER TABLE %s %s (%s);", nt.QName, verb, strings.Join(items, ", "))}
	}
	up := append(alter("SET", set), alter("RESET", reset)...)
	down := append(alter("SET", undoSet), alter("RESET", undoReset)...)
	d.add("-- Storage parameters (see QueueTableOptions in queuegen): catalog only, no rewrite.\n"+strings.Join(up, "\n"), strings.Join(down, "\n"))
	var names []string
	for _, kv := range set {
		name, _, _ := strings.Cut(kv, " ")
		names = append(names, name)
	}
	summary := "set " + strings.Join(names, ", ")
	if len(reset) > 0 {
		summary = strings.TrimPrefix(summary+"; ", "set ; ") + "reset " + strings.Join(reset, ", ")
	}
	d.note("alter_"+nt.Name, fmt.Sprintf("%s: storage parameters: %s", label, summary))
}

func (d *differ) checks(ot *Table, nt *model.Table, label string) {
	var want []string
	for _, k := range nt.Checks {
		want = append(want, fmt.Sprintf("%s %s %t", k.Name, k.Expr, k.NoInherit))
	}
	var have []string
	for _, k := range ot.Checks {
		have = append(have, fmt.Sprintf("%s %s %t", k.Name, k.Expr, k.NoInherit))
	}
	if !slices.Equal(want, have) {
		d.refuse(label+": CHECK constraints differ", "queuegen does not change CHECK constraints", manualPath)
	}
}

// indexes diffs a table's indexes. The table exists and may be large and
// busy, so indexes are built and dropped CONCURRENTLY (no lock that blocks
// pushes and claims); an index whose definition changes is built under a
// temporary name first and swapped in, so claims never run without it.
func (d *differ) indexes(ot *Table, nt *model.Table, label string) {
	oldBy := map[string]*Index{}
	for _, i := range ot.Indexes {
		oldBy[i.Name] = i
	}
	newNames := map[string]bool{}
	for _, ni := range nt.Indexes {
		newNames[ni.Name] = true
		oi := oldBy[ni.Name]
		switch {
		case oi == nil:
			d.addConcurrent(d.createIndex(nt.QName, ni.Name, ni.Unique, ni.Columns, ni.Where), d.dropIndex(ni.Name))
			d.note("alter_"+nt.Name, fmt.Sprintf("%s: add index %s", label, ni.Name))
		case oi.Primary != ni.Primary || oi.Unique != ni.Unique || !slices.Equal(oi.Columns, ni.Columns) || oi.Where != ni.Where:
			if oi.Primary || ni.Primary {
				d.refuse(label+": primary key changes", "queuegen does not change primary keys", manualPath)
				continue
			}
			tmp := tempName(ni.Name)
			d.addConcurrent(
				d.createIndex(nt.QName, tmp, ni.Unique, ni.Columns, ni.Where)+"\n"+d.dropIndex(oi.Name)+"\n"+fmt.Sprintf("ALTER INDEX IF EXISTS %s RENAME TO %s;", d.q(tmp), ni.Name),
				d.createIndex(nt.QName, tmp, oi.Unique, oi.Columns, oi.Where)+"\n"+d.dropIndex(ni.Name)+"\n"+fmt.Sprintf("ALTER INDEX IF EXISTS %s RENAME TO %s;", d.q(tmp), oi.Name))
			d.note("alter_"+nt.Name, fmt.Sprintf("%s: change index %s to (%s)%s", label, ni.Name, strings.Join(ni.Columns, ", "), where(ni.Where)))
		}
	}
	for _, oi := range ot.Indexes {
		if !newNames[oi.Name] {
			d.addConcurrent(d.dropIndex(oi.Name), d.createIndex(nt.QName, oi.Name, oi.Unique, oi.Columns, oi.Where))
			d.note("alter_"+nt.Name, fmt.Sprintf("%s: drop index %s", label, oi.Name))
		}
	}
}

func where(w string) string {
	if w == "" {
		return ""
	}
	return " WHERE " + w
}

func (d *differ) createIndex(qtable, name string, unique bool, cols []string, w string) string {
	u := ""
	if unique {
		u = "UNIQUE "
	}
	// Dropped first: a CONCURRENTLY build that failed leaves an INVALID
	// index behind, which IF NOT EXISTS would take for a good one.
	return fmt.Sprintf("DROP INDEX CONCURRENTLY IF EXISTS %s;\nCREATE %sINDEX CONCURRENTLY %s ON %s (%s)%s;", d.q(name), u, name, qtable, strings.Join(cols, ", "), where(w))
}

func (d *differ) dropIndex(name string) string {
	return fmt.Sprintf("DROP INDEX CONCURRENTLY IF EXISTS %s;", d.q(name))
}

func tempName(name string) string {
	const suffix = "_next"
	if len(name)+len(suffix) > 63 {
		name = name[:63-len(suffix)]
	}
	return name + suffix
}

// name is the migration file's name: its first actions, joined.
func (d *differ) name() string {
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
