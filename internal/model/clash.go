package model

import (
	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/spec"
)

// checkClashes refuses names that collide with the tables the migrations
// create, each at its spec key: the migrations' version table (goose's)
// named like one of queuegen's own tables or a queue's; a base or payload
// column named like any table the migrations create, since sqlc names Go
// row types and Go fields from SQL names alike, and the rename that gives
// a table's row type its Go name (mail_queue: MailRow) would rename the
// column's field too; and, where the engine limits the size of a row,
// queue tables whose rows could be too large.
func (m *Model) checkClashes(s *spec.Spec) spec.Errors {
	var errs spec.Errors
	// tables maps each table the migrations create, and each name sqlc
	// knows a table by, to what it is.
	tables := map[string]string{}
	add := func(t *catalog.Table, what string) {
		if t == nil {
			return
		}
		tables[t.Name] = what
		if m.Schema != "" && m.Schema != m.Engine.DefaultSchema() {
			// sqlc's name for a table outside the default schema.
			tables[m.Schema+"_"+t.Name] = "what sqlc calls " + what + " (" + m.Schema + "." + t.Name + ")"
		}
	}
	own := map[string]string{}
	for _, t := range []struct {
		t    *catalog.Table
		what string
	}{{m.Engine.Registry(), "queuegen's queue registry"}, {m.Engine.Periodic(), "queuegen's periodic-ticks table"}, {m.Engine.Nodes(), "queuegen's nodes table"}} {
		add(t.t, t.what)
		own[t.t.Name] = t.what
	}
	what, ok := own[s.MigrationsTable]
	if b := m.Catalog.Base; b != nil && b.Name == s.MigrationsTable {
		what, ok = "the base table", true
	}
	if ok {
		errs = append(errs, s.ErrorAt("migrations_table", "%q is %s, which the migrations create; goose's version table needs a name of its own (the default is %s)", s.MigrationsTable, what, spec.DefaultMigrations))
	}
	if what, ok := own[s.Base.Table]; ok && m.Catalog.Base != nil {
		errs = append(errs, s.ErrorAt("base.table", "%q is %s; choose another name", s.Base.Table, what))
	}
	tables[s.MigrationsTable] = "the migrations' version table (migrations_table)"
	if b := m.Catalog.Base; b != nil {
		add(b, "the base table")
	}
	for _, q := range m.Queues {
		add(q.Table, "queue "+q.Name+"'s table")
		add(q.Archive, "queue "+q.Name+"'s archive")
		add(q.RateLog, "queue "+q.Name+"'s rate log")
		add(q.Backlog, "queue "+q.Name+"'s backlog")
	}
	column := func(key, name string) {
		if what, ok := tables[name]; ok {
			errs = append(errs, s.ErrorAt(key, "%q is also the name of %s: a column may not share its name with a table the migrations create, since sqlc names Go row types and fields from SQL names alike (the rename that names a table's row type would rename the column's field, and the code would not compile); choose another column name", name, what))
		}
	}
	for _, c := range s.Base.Columns {
		column("base.columns."+c.Name, c.Name)
	}
	for i, q := range m.Queues {
		sq := s.Queues[i]
		key := "queues[" + sq.Name + "]"
		if j := sq.Payload.JSON; j != nil {
			column(key+".payload.json.column", j.Column)
		}
		for _, c := range sq.Payload.Columns {
			column(key+".payload.columns."+c.Name, c.Name)
		}
		if rl, ok := m.Engine.(engine.RowLimiter); ok {
			if why := rl.RowTooBig(q.Table); why != "" {
				errs = append(errs, s.ErrorAt(key+".payload", "queue %s (table %s): %s", q.Name, q.Table.Name, why))
			}
		}
	}
	return errs
}
