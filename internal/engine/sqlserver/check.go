package sqlserver

import (
	"fmt"
	"time"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/spec"
)

// Check refuses what SQL Server cannot serve, each error at the spec key
// with the reason: a base table, notifications, arrays, types whose SQL
// Server counterpart would change the values, and reserved words.
func (Engine) Check(s *spec.Spec) spec.Errors {
	var errs spec.Errors
	if s.Has("schema") && reserved(s.Schema) {
		errs = append(errs, s.ErrorAt("schema", "%q is a SQL Server keyword; choose another schema name", s.Schema))
	}
	if s.Has("migrations_table") && reserved(s.MigrationsTable) {
		errs = append(errs, s.ErrorAt("migrations_table", "%q is a SQL Server keyword; choose another name for the migrations' version table", s.MigrationsTable))
	}
	if s.Has("base.table") {
		errs = append(errs, s.ErrorAt("base.table", "SQL Server has no table inheritance, so there is no base table: base.columns are copied into each queue table; remove base.table"))
	}
	errs = append(errs, checkColumns(s, "base.columns", s.Base.Columns)...)
	for _, q := range s.Queues {
		key := "queues[" + q.Name + "]"
		if reserved(q.Table) {
			k := key + ".table"
			if !s.Has(k) {
				k = key + ".name"
			}
			errs = append(errs, s.ErrorAt(k, "the table name %q is a SQL Server keyword; choose another", q.Table))
		}
		errs = append(errs, checkFairBy(s, key, q)...)
		if q.Rate.Set() && q.Rate.Per%time.Millisecond != 0 {
			errs = append(errs, s.ErrorAt(key+".rate.per", "SQL Server's rate window is counted in whole milliseconds (DATEADD(millisecond, …)); make per a whole number of milliseconds"))
		}
		if q.Notify {
			errs = append(errs, s.ErrorAt(key+".notify", "SQL Server has no LISTEN/NOTIFY (queuegen does not use Service Broker): workers poll (queue.PollInterval), and a push made through the same process wakes its workers at once; remove notify"))
		}
		errs = append(errs, checkColumns(s, key+".payload.columns", q.Payload.Columns)...)
		if j := q.Payload.JSON; j != nil && reserved(j.Column) {
			errs = append(errs, s.ErrorAt(key+".payload.column", "the column name %q is a SQL Server keyword; choose another", j.Column))
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
		if reserved(c.Name) {
			errs = append(errs, s.ErrorAt(k, "%q is a SQL Server keyword; choose another column name", c.Name))
		}
		switch {
		case t.Array:
			errs = append(errs, s.ErrorAt(k+".type", "SQL Server has no array types: use a jsonb column, or a JSON payload"))
		case t.Name == "varchar" && t.Mods[0] > maxNVarchar:
			errs = append(errs, s.ErrorAt(k+".type", "SQL Server's NVARCHAR(n) holds at most %d characters; use text (NVARCHAR(MAX))", maxNVarchar))
		case t.Name == "numeric" && len(t.Mods) == 0:
			errs = append(errs, s.ErrorAt(k+".type", "SQL Server has no unconstrained numeric: DECIMAL without a precision is DECIMAL(18, 0), which would round to whole numbers; give one, e.g. numeric(12, 2)"))
		case t.Name == "numeric" && t.Mods[0] > 38:
			errs = append(errs, s.ErrorAt(k+".type", "SQL Server's DECIMAL has at most 38 digits"))
		}
	}
	return errs
}

// checkFairBy refuses a fair_by column SQL Server cannot index: the fair
// index leads with it, and an index key holds at most 1,700 bytes
// (NVARCHAR(MAX) and VARBINARY(MAX) none at all).
func checkFairBy(s *spec.Spec, key string, q *spec.Queue) spec.Errors {
	if q.FairBy == "" {
		return nil
	}
	for _, c := range q.Payload.Columns {
		if c.Name != q.FairBy {
			continue
		}
		switch t := c.Type; {
		case t.Array:
			return nil // refused as an array (checkColumns)
		case t.Name == "text" || t.Name == "jsonb" || t.Name == "bytea":
			return spec.Errors{s.ErrorAt(key+".fair_by", "column %s is %s, which SQL Server stores as a MAX type that cannot key an index, and the fair claim reads an index led by it; make it varchar(n), n up to %d", c.Name, t.Name, maxFairKey)}
		case t.Name == "varchar" && len(t.Mods) > 0 && t.Mods[0] > maxFairKey:
			return spec.Errors{s.ErrorAt(key+".fair_by", "column %s is varchar(%d): the fair index leads with it, and an index key holds at most 1,700 bytes (NVARCHAR: 2 bytes a character); make it varchar(n), n up to %d", c.Name, t.Mods[0], maxFairKey)}
		}
	}
	return nil
}

// maxFairKey is the longest varchar a fair_by column may be: the fair
// index's key, 1,700 bytes at most, holds it (2 bytes a character) and the
// claim order's columns (priority, run_after, id: 18 bytes).
const maxFairKey = 840

// maxNVarchar is the longest NVARCHAR(n).
const maxNVarchar = 4000

// BaseTable is never asked for: SQL Server has no inheritance (see
// Inheritance).
func (Engine) BaseTable(name string, _ []*catalog.Column) *catalog.Table {
	panic(fmt.Sprintf("sqlserver: no base table %s: SQL Server has no INHERITS", name))
}
