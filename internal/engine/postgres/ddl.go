package postgres

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
)

// ddl writes PostgreSQL DDL for tables in one schema.
type ddl struct{ schema string }

func (d ddl) q(name string) string { return Engine{}.Qualify(d.schema, name) }

func (d ddl) MaxIdentifier() int { return MaxIdentifier }

func (d ddl) CreateSchema() string {
	if d.schema == DefaultSchema {
		return ""
	}
	return "CREATE SCHEMA IF NOT EXISTS " + d.schema + ";"
}

// CreateTable writes CREATE TABLE with aligned columns (name, type, NOT
// NULL and default, comment), then the primary key, unique constraints and
// checks, INHERITS and the storage parameters.
func (d ddl) CreateTable(t *catalog.Table) string {
	s := engine.GooseGuard(d.createTable(t), engine.Defaults(t.Columns)...)
	if t.Distribution != nil {
		s = d.createSequence(t) + "\n\n" + s
	}
	return s
}

func (d ddl) createTable(t *catalog.Table) string {
	var b strings.Builder
	engine.Lines(&b, t.Comment)
	fmt.Fprintf(&b, "CREATE TABLE %s (", d.q(t.Name))
	var items []string
	items = append(items, engine.ColumnLines(t.Columns)...)
	for _, i := range t.Indexes {
		switch {
		case i.Primary:
			items = append(items, fmt.Sprintf("CONSTRAINT %s PRIMARY KEY (%s)", i.Name, strings.Join(i.Columns, ", ")))
		case i.Constraint:
			items = append(items, fmt.Sprintf("CONSTRAINT %s UNIQUE (%s)", i.Name, strings.Join(i.Columns, ", ")))
		}
	}
	for _, k := range t.Checks {
		s := fmt.Sprintf("CONSTRAINT %s CHECK (%s)", k.Name, k.Expr)
		if k.NoInherit {
			s += " NO INHERIT"
		}
		items = append(items, s)
	}
	if len(items) > 0 {
		b.WriteString("\n")
		b.WriteString(engine.JoinItems(items))
		b.WriteString("\n")
	}
	b.WriteString(")")
	if t.Inherits != "" {
		fmt.Fprintf(&b, " INHERITS (%s)", d.q(t.Inherits))
	}
	if t.PartitionBy != "" {
		fmt.Fprintf(&b, " PARTITION BY %s", t.PartitionBy)
	}
	if len(t.Options) > 0 {
		b.WriteString("\n")
		engine.Lines(&b, t.OptionsComment)
		b.WriteString("WITH (\n")
		for i, o := range t.Options {
			b.WriteString("    " + o.Name + " = " + o.Value)
			if i < len(t.Options)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(")")
	}
	b.WriteString(";")
	return b.String()
}

// CreateDefaultPartition writes the default partition of an archive.
func (d ddl) CreateDefaultPartition(t *catalog.Table) string {
	var b strings.Builder
	engine.Lines(&b, engine.Comment("The rows of days that have no partition of their own: before the queue's first Purge, or when Purge could not make a day's partition in time."))
	fmt.Fprintf(&b, "CREATE TABLE %s PARTITION OF %s DEFAULT;", d.q(t.DefaultPartition()), d.q(t.Name))
	return b.String()
}

// CreateIndex writes CREATE INDEX for a new table (no CONCURRENTLY: the
// table is empty, and the migration's transaction creates it).
func (d ddl) CreateIndex(t *catalog.Table, i *catalog.Index) string {
	var b strings.Builder
	engine.Lines(&b, engine.Comment(i.Comment))
	b.WriteString(createIndex(d.q(t.Name), i, false))
	return b.String()
}

func createIndex(qtable string, i *catalog.Index, concurrently bool) string {
	u, c := "", ""
	if i.Unique {
		u = "UNIQUE "
	}
	if concurrently {
		c = "CONCURRENTLY "
	}
	s := fmt.Sprintf("CREATE %sINDEX %s%s ON %s (%s)", u, c, i.Name, qtable, strings.Join(i.Columns, ", "))
	if i.Where != "" {
		s += "\n    WHERE " + i.Where
	}
	return s + ";"
}

func (d ddl) DropTable(t *catalog.Table) string {
	if t.Distribution != nil {
		return "DROP TABLE " + d.q(t.Name) + ";\nDROP SEQUENCE " + d.q(t.Distribution.Sequence) + ";"
	}
	return "DROP TABLE " + d.q(t.Name) + ";"
}

func (d ddl) CreateFunction(name string) string {
	var b strings.Builder
	engine.Lines(&b, engine.Comment(name+" wakes the workers of queues declared with notify: true. After each "+
		"INSERT or COPY into such a queue's table it sends one notification on channel "+
		"queuegen_<table> (PostgreSQL folds repeats within a transaction into one). NOTIFY takes a "+
		"cluster-wide lock at commit, which serialises committing pushers: enable it where wake-up "+
		"latency matters more than peak push rate."))
	fmt.Fprintf(&b, `-- +goose StatementBegin
CREATE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('queuegen_' || TG_TABLE_NAME, '');
    RETURN NULL;
END
$$;
-- +goose StatementEnd`, d.q(name))
	return b.String()
}

func (d ddl) DropFunction(name string) string { return "DROP FUNCTION " + d.q(name) + "();" }

func (d ddl) CreateTrigger(t *catalog.Table) string {
	return fmt.Sprintf("-- Notifies listening workers once per statement that pushes jobs.\nCREATE TRIGGER %s AFTER INSERT ON %s\n    FOR EACH STATEMENT EXECUTE FUNCTION %s();",
		t.NotifyTrigger, d.q(t.Name), d.q(NotifyFunction))
}

// MoveBacklog moves the backlog's jobs into the queue table in one
// statement, inside the migration's transaction: the queue's workers
// claim them from there, in claim order, once the backlog is gone. The
// backlog is locked first, so a push that reaches it during the move
// waits and then fails on the dropped table rather than being left behind.
func (d ddl) MoveBacklog(backlog, queue string, columns []string) string {
	list := func(indent string) string {
		return strings.Join(engine.Wrap(indent, strings.Join(columns, ", "), 80), "\n")
	}
	return fmt.Sprintf("LOCK TABLE %s IN ACCESS EXCLUSIVE MODE;\nWITH moved AS (\n    DELETE FROM %s\n    RETURNING\n%s\n)\nINSERT INTO %s (\n%s\n)\nSELECT\n%s\nFROM moved;",
		d.q(backlog), d.q(backlog), list("        "), d.q(queue), list("    "), list("    "))
}

func (d ddl) DropTrigger(t *catalog.Table, name string) string {
	return fmt.Sprintf("DROP TRIGGER IF EXISTS %s ON %s;", name, d.q(t.Name))
}

func (d ddl) Register(q *catalog.Queue) string {
	return fmt.Sprintf("INSERT INTO %s (name, table_name, mode)\nVALUES (%s, %s, %s);", d.q(RegistryTable), quote(q.Name), quote(q.Table.Name), quote(q.Mode))
}

func (d ddl) Unregister(name string) string {
	return fmt.Sprintf("DELETE FROM %s WHERE name = %s;", d.q(RegistryTable), quote(name))
}

func (d ddl) Reregister(from, to *catalog.Queue) string {
	return fmt.Sprintf("UPDATE %s\nSET name = %s, table_name = %s, mode = %s\nWHERE name = %s;",
		d.q(RegistryTable), quote(to.Name), quote(to.Table.Name), quote(to.Mode), quote(from.Name))
}

func (d ddl) ReleaseLeases(t *catalog.Table) string {
	return engine.ReleaseLeasesSQL(d.q(t.Name))
}

func (d ddl) RenameTable(from, to string) string {
	return fmt.Sprintf("ALTER TABLE %s RENAME TO %s;", d.q(from), to)
}

func (d ddl) RenameIndex(_, from, to string) string {
	return fmt.Sprintf("ALTER INDEX %s RENAME TO %s;", d.q(from), to)
}

func (d ddl) RenameConstraint(table, from, to string) string {
	return fmt.Sprintf("ALTER TABLE %s RENAME CONSTRAINT %s TO %s;", d.q(table), from, to)
}

func (d ddl) RenameSequence(from, to string) string {
	return fmt.Sprintf("ALTER SEQUENCE %s RENAME TO %s;", d.q(from), to)
}

func (d ddl) RenameTrigger(table, from, to string) string {
	return fmt.Sprintf("ALTER TRIGGER %s ON %s RENAME TO %s;", from, d.q(table), to)
}

// AddColumn adds a column; ALTER TABLE without ONLY reaches the children
// of an INHERITS parent, so a base column is one statement.
func (d ddl) AddColumn(t *catalog.Table, c *catalog.Column) string {
	return engine.GooseGuard(fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s;", d.q(t.Name), engine.ColumnDef(c)), c.Default)
}

// AddRewrites: since PostgreSQL 11 a column with a non-volatile default is
// added without touching the rows; a volatile default is evaluated for
// every row, rewriting the table under an exclusive lock.
func (d ddl) AddRewrites(c *catalog.Column) string {
	switch c.Default {
	case "clock_timestamp()", "gen_random_uuid()":
		return "its default " + c.Default + " is volatile: PostgreSQL evaluates it for every existing row, rewriting the table under an exclusive lock"
	}
	return ""
}

func (d ddl) DropColumn(t *catalog.Table, name string) string {
	return fmt.Sprintf("ALTER TABLE %s DROP COLUMN IF EXISTS %s;", d.q(t.Name), name)
}

func (d ddl) RenameColumn(t *catalog.Table, from, to string) string {
	return fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s;", d.q(t.Name), from, to)
}

func (d ddl) alterColumn(t *catalog.Table, column string) string {
	return fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s", d.q(t.Name), column)
}

func (d ddl) ChangeType(t *catalog.Table, c *catalog.Column, from string) string {
	if ok, _ := d.Widens(from, c.Type); ok {
		return fmt.Sprintf("-- Widening: PostgreSQL changes the type in place, without rewriting the table.\n%s TYPE %s;", d.alterColumn(t, c.Name), c.Type)
	}
	return fmt.Sprintf("-- Narrowing back fails if a value no longer fits %s.\n%s TYPE %s;", c.Type, d.alterColumn(t, c.Name), c.Type)
}

func (d ddl) SetNotNull(t *catalog.Table, column string) string {
	return "-- Fails if NULLs were stored meanwhile.\n" + d.alterColumn(t, column) + " SET NOT NULL;"
}

func (d ddl) DropNotNull(t *catalog.Table, column string) string {
	return d.alterColumn(t, column) + " DROP NOT NULL;"
}

func (d ddl) SetDefault(t *catalog.Table, column, def string) string {
	return engine.GooseGuard(d.alterColumn(t, column)+" SET DEFAULT "+def+";", def)
}

func (d ddl) DropDefault(t *catalog.Table, column string) string {
	return d.alterColumn(t, column) + " DROP DEFAULT;"
}

// SetOptions and ResetOptions change only the catalog: a brief lock, no
// rewrite.
func (d ddl) SetOptions(t *catalog.Table, opts []catalog.Option) string {
	items := make([]string, len(opts))
	for i, o := range opts {
		items[i] = o.Name + " = " + o.Value
	}
	return fmt.Sprintf("ALTER TABLE %s SET (%s);", d.q(t.Name), strings.Join(items, ", "))
}

func (d ddl) ResetOptions(t *catalog.Table, names []string) string {
	return fmt.Sprintf("ALTER TABLE %s RESET (%s);", d.q(t.Name), strings.Join(names, ", "))
}

// CreateIndexOnline builds an index CONCURRENTLY, which does not block
// pushes and claims. It drops the index first: a CONCURRENTLY build that
// failed leaves an INVALID index behind, which IF NOT EXISTS would take for
// a good one.
func (d ddl) CreateIndexOnline(t *catalog.Table, i *catalog.Index) string {
	return "DROP INDEX CONCURRENTLY IF EXISTS " + d.q(i.Name) + ";\n" + createIndex(d.q(t.Name), i, true)
}

func (d ddl) DropIndexOnline(_ *catalog.Table, name string) string {
	return "DROP INDEX CONCURRENTLY IF EXISTS " + d.q(name) + ";"
}

func (d ddl) RenameIndexOnline(_, from, to string) string {
	return fmt.Sprintf("ALTER INDEX IF EXISTS %s RENAME TO %s;", d.q(from), to)
}

// OnlineIndexesNeedNoTransaction: CREATE and DROP INDEX CONCURRENTLY
// cannot run in a transaction block.
func (d ddl) OnlineIndexesNeedNoTransaction() bool { return true }

var typeRE = regexp.MustCompile(`^([a-z ]+)(?:\((\d+)(?:, (\d+))?\))?(\[\])?$`)

// Widens reports whether PostgreSQL changes type from to type to without
// rewriting the table or checking the rows: a longer varchar, varchar to
// text, a wider numeric of the same scale, or any numeric to unconstrained
// numeric. Not for arrays: PostgreSQL converts an array column element by
// element, rewriting the table, whatever the element types.
func (d ddl) Widens(from, to string) (bool, string) {
	f, t := typeRE.FindStringSubmatch(from), typeRE.FindStringSubmatch(to)
	const why = "PostgreSQL cannot make this change in place: it would rewrite the table under an exclusive lock, or fail on existing values"
	if f == nil || t == nil || f[4] != t[4] {
		return false, why
	}
	if f[4] != "" {
		return false, "PostgreSQL converts an array column element by element, rewriting the table under an exclusive lock, whatever the element types"
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	switch {
	case f[1] == "varchar" && t[1] == "text":
		return true, ""
	case f[1] == "varchar" && t[1] == "varchar" && num(t[2]) >= num(f[2]):
		return true, ""
	case f[1] == "numeric" && t[1] == "numeric" && t[2] == "":
		return true, ""
	case f[1] == "numeric" && t[1] == "numeric" && f[2] != "" && num(t[2]) >= num(f[2]) && num(t[3]) == num(f[3]):
		return true, ""
	}
	return false, why
}
