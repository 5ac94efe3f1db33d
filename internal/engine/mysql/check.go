package mysql

import (
	"fmt"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/spec"
)

// Check refuses what MySQL cannot serve, each error at the spec key with
// the reason: schemas, a base table, notifications, arrays, types whose
// MySQL counterpart would change the values, and names MySQL (or sqlc's
// parser of MySQL) reserves.
func (Engine) Check(s *spec.Spec) spec.Errors {
	var errs spec.Errors
	if s.Has("schema") {
		errs = append(errs, s.ErrorAt("schema", "MySQL has no schemas inside a database: the tables go in the database the connection names; remove schema"))
	}
	if s.Has("migrations_table") && reserved(s.MigrationsTable) {
		errs = append(errs, s.ErrorAt("migrations_table", "%q is a MySQL keyword; choose another name for the migrations' version table", s.MigrationsTable))
	}
	if s.Has("base.table") {
		errs = append(errs, s.ErrorAt("base.table", "MySQL has no table inheritance, so there is no base table: base.columns are copied into each queue table; remove base.table"))
	}
	errs = append(errs, checkColumns(s, "base.columns", s.Base.Columns)...)
	for _, q := range s.Queues {
		key := "queues[" + q.Name + "]"
		if reserved(q.Table) {
			k := key + ".table"
			if !s.Has(k) {
				k = key + ".name"
			}
			errs = append(errs, s.ErrorAt(k, "the table name %q is a MySQL keyword; choose another", q.Table))
		}
		errs = append(errs, checkFairBy(s, key, q)...)
		if q.Notify {
			errs = append(errs, s.ErrorAt(key+".notify", "MySQL has no LISTEN/NOTIFY: workers poll (queue.PollInterval), and a push made through the same process wakes its workers at once; remove notify"))
		}
		errs = append(errs, checkColumns(s, key+".payload.columns", q.Payload.Columns)...)
		if j := q.Payload.JSON; j != nil && reserved(j.Column) {
			errs = append(errs, s.ErrorAt(key+".payload.column", "the column name %q is a MySQL keyword; choose another", j.Column))
		}
	}
	return errs
}

// checkColumns checks base or payload columns declared under key.
func checkColumns(s *spec.Spec, key string, cs []*spec.Column) spec.Errors {
	var errs spec.Errors
	for _, c := range cs {
		k := key + "." + c.Name
		t := c.Type
		switch {
		case reserved(c.Name):
			errs = append(errs, s.ErrorAt(k, "%q is a MySQL keyword; choose another column name", c.Name))
		case c.Name == uniqueActive.Name:
			errs = append(errs, s.ErrorAt(k, "%q is a column of every MySQL queue table with a unique key; choose another name", c.Name))
		}
		switch {
		case t.Array:
			errs = append(errs, s.ErrorAt(k+".type", "MySQL has no array types: use a jsonb column, or a JSON payload"))
		case t.Name == "varchar" && t.Mods[0] > maxVarchar:
			errs = append(errs, s.ErrorAt(k+".type", "MySQL's VARCHAR holds at most %d utf8mb4 characters (65,535 bytes a row); use text", maxVarchar))
		case t.Name == "numeric" && len(t.Mods) == 0:
			errs = append(errs, s.ErrorAt(k+".type", "MySQL has no unconstrained numeric: DECIMAL without a precision is DECIMAL(10, 0), which would round to whole numbers; give one, e.g. numeric(12, 2)"))
		case t.Name == "numeric" && (t.Mods[0] > 65 || len(t.Mods) == 2 && t.Mods[1] > 30):
			errs = append(errs, s.ErrorAt(k+".type", "MySQL's DECIMAL has at most 65 digits, 30 of them after the point"))
		}
	}
	return errs
}

// checkFairBy refuses a fair_by column InnoDB cannot index whole: the
// fair index (state, column, …) must hold the column's full value to
// serve the claim's equality probes and its order.
func checkFairBy(s *spec.Spec, key string, q *spec.Queue) spec.Errors {
	if q.FairBy == "" || q.Payload.JSON != nil {
		return nil
	}
	for _, c := range q.Payload.Columns {
		if c.Name != q.FairBy {
			continue
		}
		switch t := c.Type; {
		case t.Name == "text" || t.Name == "jsonb" || t.Name == "bytea":
			return spec.Errors{s.ErrorAt(key+".fair_by", "column %s is %s, which InnoDB indexes only by a prefix, and the fair index needs whole values; make it varchar(n), n at most %d, or an integer", c.Name, t.Name, maxFairVarchar)}
		case t.Name == "varchar" && t.Mods[0] > maxFairVarchar:
			return spec.Errors{s.ErrorAt(key+".fair_by", "column %s is varchar(%d): the fair index's key would pass InnoDB's 3,072 bytes (4 a utf8mb4 character); make it at most varchar(%d)", c.Name, t.Mods[0], maxFairVarchar)}
		}
	}
	return nil
}

// maxFairVarchar is the longest VARCHAR of utf8mb4 characters a fair index
// holds within InnoDB's 3,072-byte key, beside state, priority, run_after
// and id (1 + 2 + 8 + 8 bytes, and 2 of length).
const maxFairVarchar = 762

// maxVarchar is the longest VARCHAR of utf8mb4 characters a row can hold.
const maxVarchar = 16383

// BaseTable is never asked for: MySQL has no inheritance (see Inheritance).
func (Engine) BaseTable(name string, _ []*catalog.Column) *catalog.Table {
	panic(fmt.Sprintf("mysql: no base table %s: MySQL has no INHERITS", name))
}
