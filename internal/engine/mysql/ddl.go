package mysql

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
)

// ddl writes MySQL DDL. MySQL has no schemas inside a database: every
// table goes in the database the connection names.
//
// MySQL's DDL is not transactional: each statement commits by itself, so a
// migration that fails midway keeps the statements before the failure.
// queuegen therefore creates each queue table, keys and indexes included,
// in one statement, and states how each ALTER TABLE may run (INSTANT, or
// INPLACE with LOCK=NONE), so that a change that would copy a busy table
// under a lock fails at once instead.
type ddl struct{}

func (ddl) MaxIdentifier() int { return MaxIdentifier }

// tableOptions are those of every table: InnoDB, for row locks and
// SKIP LOCKED; utf8mb4 for any text; a binary collation, so that unique
// keys, node ids and payload text compare byte for byte, as PostgreSQL's
// do.
const tableOptions = "ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin"

func (ddl) CreateSchema() string { return "" }

// CreateTable writes CREATE TABLE with aligned columns, then the primary
// key and every index (each with the comment of what it serves), then the
// table options.
func (d ddl) CreateTable(t *catalog.Table) string {
	var b strings.Builder
	engine.Lines(&b, t.Comment)
	fmt.Fprintf(&b, "CREATE TABLE %s (\n", t.Name)
	items := engine.ColumnLines(t.Columns)
	for _, i := range t.Indexes {
		items = append(items, indexItem(i))
	}
	for _, k := range t.Checks {
		items = append(items, fmt.Sprintf("CONSTRAINT %s CHECK (%s)", k.Name, k.Expr))
	}
	b.WriteString(engine.JoinItems(items))
	b.WriteString("\n) " + tableOptions)
	if t.PartitionBy != "" {
		// A partitioned table (an archive) starts with its last partition
		// alone; the queue's Purge splits it into daily ones.
		fmt.Fprintf(&b, "\nPARTITION BY %s (\n    PARTITION %s VALUES LESS THAN (MAXVALUE)\n)", t.PartitionBy, ArchivePartition)
	}
	b.WriteString(";")
	return engine.GooseGuard(b.String(), engine.Defaults(t.Columns)...)
}

// indexItem declares an index inside CREATE TABLE, with its comment above.
func indexItem(i *catalog.Index) string {
	cols := strings.Join(i.Columns, ", ")
	if i.Primary {
		return "PRIMARY KEY (" + cols + ")"
	}
	var b strings.Builder
	if i.Comment != "" {
		engine.Lines(&b, engine.Comment(i.Comment))
	}
	if i.Unique {
		b.WriteString("UNIQUE ")
	}
	fmt.Fprintf(&b, "KEY %s (%s)", i.Name, cols)
	return b.String()
}

// CreateIndex writes nothing: CreateTable declares every index of a new
// table.
func (ddl) CreateIndex(*catalog.Table, *catalog.Index) string { return "" }

func (ddl) DropTable(t *catalog.Table) string { return "DROP TABLE " + t.Name + ";" }

// MySQL has no LISTEN/NOTIFY: the engine refuses notify, so there are no
// notify functions or triggers to write.
func (ddl) CreateFunction(string) string                       { return "" }
func (ddl) DropFunction(string) string                         { return "" }
func (ddl) CreateTrigger(*catalog.Table) string                { return "" }
func (ddl) DropTrigger(*catalog.Table, string) string          { return "" }
func (ddl) RenameSequence(string, string) string               { return "" }
func (ddl) RenameTrigger(string, string, string) string        { return "" }
func (ddl) SetOptions(*catalog.Table, []catalog.Option) string { return "" }
func (ddl) ResetOptions(*catalog.Table, []string) string       { return "" }

func (ddl) Register(q *catalog.Queue) string {
	return fmt.Sprintf("INSERT INTO %s (name, table_name, mode)\nVALUES (%s, %s, %s);", RegistryTable, quote(q.Name), quote(q.Table.Name), quote(q.Mode))
}

func (ddl) Unregister(name string) string {
	return fmt.Sprintf("DELETE FROM %s WHERE name = %s;", RegistryTable, quote(name))
}

func (ddl) Reregister(from, to *catalog.Queue) string {
	return fmt.Sprintf("UPDATE %s\nSET name = %s, table_name = %s, mode = %s\nWHERE name = %s;",
		RegistryTable, quote(to.Name), quote(to.Table.Name), quote(to.Mode), quote(from.Name))
}

func (ddl) ReleaseLeases(t *catalog.Table) string {
	return engine.ReleaseLeasesSQL(t.Name)
}

func (ddl) RenameTable(from, to string) string {
	return fmt.Sprintf("RENAME TABLE %s TO %s;", from, to)
}

func (ddl) RenameIndex(table, from, to string) string {
	return fmt.Sprintf("ALTER TABLE %s RENAME INDEX %s TO %s;", table, from, to)
}

// RenameConstraint renames a unique constraint, which in MySQL is an
// index. (queuegen's MySQL tables have no named CHECK constraints.)
func (d ddl) RenameConstraint(table, from, to string) string { return d.RenameIndex(table, from, to) }

// AddColumn adds a column as the last one, which MySQL 8.0.12+ and MariaDB
// 10.3+ do instantly, without touching the rows; ALGORITHM=INSTANT makes
// the statement fail rather than copy the table where they cannot.
func (ddl) AddColumn(t *catalog.Table, c *catalog.Column) string {
	return engine.GooseGuard(fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s, ALGORITHM = INSTANT;", t.Name, engine.ColumnDef(c)), c.Default)
}

// AddRewrites: a default that is evaluated per row (the clock, UUID())
// cannot be added instantly; MySQL would copy the table.
func (ddl) AddRewrites(c *catalog.Column) string {
	if strings.Contains(c.Default, "UTC_") || strings.Contains(c.Default, "UUID()") {
		return "its default " + c.Default + " is evaluated for every existing row, which MySQL cannot do instantly: it would copy the table"
	}
	return ""
}

// online is the clause of an ALTER TABLE that rebuilds a table or an
// index while pushes and claims go on, or fails if it cannot.
const online = "ALGORITHM = INPLACE, LOCK = NONE"

func (ddl) DropColumn(t *catalog.Table, name string) string {
	return fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s, %s;", t.Name, name, online)
}

func (ddl) RenameColumn(t *catalog.Table, from, to string) string {
	return fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s;", t.Name, from, to)
}

// modify redefines column c of t whole, as MySQL's MODIFY COLUMN needs.
func modify(t *catalog.Table, c *catalog.Column, clause string) string {
	s := fmt.Sprintf("ALTER TABLE %s MODIFY COLUMN %s", t.Name, engine.ColumnDef(c))
	if !c.NotNull {
		s = fmt.Sprintf("ALTER TABLE %s MODIFY COLUMN %s %s NULL", t.Name, c.Name, c.Type)
		if c.Default != "" {
			s += " DEFAULT " + c.Default
		}
	}
	if clause != "" {
		s += ", " + clause
	}
	return engine.GooseGuard(s+";", c.Default)
}

func (d ddl) ChangeType(t *catalog.Table, c *catalog.Column, from string) string {
	if ok, _ := d.Widens(from, c.Type); ok {
		return "-- Widening within one length prefix: MySQL changes the type in place.\n" + modify(t, c, online)
	}
	return fmt.Sprintf("-- Narrowing back copies the table, and fails if a value no longer fits %s.\n%s", c.Type, modify(t, c, ""))
}

// column is t's column name, to redefine it whole.
func column(t *catalog.Table, name string) *catalog.Column {
	if c := t.Column(name); c != nil {
		return c
	}
	panic("mysql: no column " + name + " in " + t.Name)
}

func (ddl) SetNotNull(t *catalog.Table, name string) string {
	c := *column(t, name)
	c.NotNull = true
	return "-- Fails if NULLs were stored meanwhile; rebuilds the table online.\n" + modify(t, &c, online)
}

func (ddl) DropNotNull(t *catalog.Table, name string) string {
	c := *column(t, name)
	c.NotNull = false
	return "-- Rebuilds the table online.\n" + modify(t, &c, online)
}

// SetDefault and DropDefault change only the table's definition.
func (ddl) SetDefault(t *catalog.Table, name, def string) string {
	return engine.GooseGuard(fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT %s;", t.Name, name, def), def)
}

func (ddl) DropDefault(t *catalog.Table, name string) string {
	return fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT;", t.Name, name)
}

// CreateIndexOnline builds an index while pushes and claims go on. MySQL 8
// and MariaDB create an index atomically: a failed build leaves nothing
// behind, so the statement can run again.
func (ddl) CreateIndexOnline(t *catalog.Table, i *catalog.Index) string {
	u := ""
	if i.Unique {
		u = "UNIQUE "
	}
	return fmt.Sprintf("ALTER TABLE %s ADD %sINDEX %s (%s), %s;", t.Name, u, i.Name, strings.Join(i.Columns, ", "), online)
}

func (ddl) DropIndexOnline(t *catalog.Table, name string) string {
	return fmt.Sprintf("ALTER TABLE %s DROP INDEX %s, %s;", t.Name, name, online)
}

func (ddl) RenameIndexOnline(table, from, to string) string {
	return fmt.Sprintf("ALTER TABLE %s RENAME INDEX %s TO %s, %s;", table, from, to, online)
}

// OnlineIndexesNeedNoTransaction: MySQL builds indexes online inside a
// migration's transaction as well (DDL commits by itself anyway).
func (ddl) OnlineIndexesNeedNoTransaction() bool { return false }

var varcharRE = regexp.MustCompile(`^VARCHAR\((\d+)\)$`)

// Widens reports whether MySQL changes type from to type to in place:
// only a longer VARCHAR whose length prefix stays one byte (up to 63
// utf8mb4 characters, 255 bytes) or two (64 characters and more). Any
// other change copies the table under a lock, or fails on existing values.
func (ddl) Widens(from, to string) (bool, string) {
	f, t := varcharRE.FindStringSubmatch(from), varcharRE.FindStringSubmatch(to)
	const why = "MySQL cannot make this change in place: it would copy the table under a lock, or fail on existing values"
	if f == nil || t == nil {
		return false, why
	}
	n, _ := strconv.Atoi(f[1])
	m, _ := strconv.Atoi(t[1])
	switch {
	case m < n:
		return false, why
	case (n <= 63) != (m <= 63):
		return false, "MySQL copies the table to widen a VARCHAR past 63 characters (255 bytes of utf8mb4), where its length prefix grows to two bytes"
	}
	return true, ""
}

// MoveBacklog moves the backlog's jobs into the queue table, ids and all,
// and drops it. MySQL cannot lock a table inside a migration's
// transaction, as PostgreSQL does, so the backlog is first renamed out of
// pushes' reach: RENAME TABLE waits for the statements and transactions
// using it to end, and a push of the code before this migration then
// fails (no such table) rather than land in a backlog about to be
// dropped. The renamed table's rows are then moved in one statement and
// the table dropped. The queue table numbers on above the moved ids (an
// insert with an id moves AUTO_INCREMENT past it), and above any id the
// backlog gave to a job since purged (NumberAfter, before the move).
func (d ddl) MoveBacklog(backlog, queue string, columns []string) string {
	moving := strings.TrimSuffix(backlog, "_backlog") + "_moving"
	list := func(indent string) string {
		return strings.Join(engine.Wrap(indent, strings.Join(columns, ", "), 80), "\n")
	}
	return fmt.Sprintf("%s\n\n-- Out of pushes' reach (a push of the code before this migration now fails),\n-- then every job to the queue table, ids and all.\nRENAME TABLE %s TO %s;\nINSERT INTO %s (\n%s\n)\nSELECT\n%s\nFROM %s;\nDROP TABLE %s;",
		d.NumberAfter(backlog, queue), backlog, moving, queue, list("    "), list("    "), moving, moving)
}

// DropsBacklog: MoveBacklog drops the backlog (see there).
func (ddl) DropsBacklog() {}

// NumberAfter raises table to's AUTO_INCREMENT above every id table from
// holds (its largest) or has given (its AUTO_INCREMENT, which
// information_schema may show from a cache, so never higher than it is),
// and above to's own: ALTER TABLE takes only a constant, so the statement
// is prepared from the value. A backlog added to a queue with jobs starts
// above them, so that a job keeps one id in either table.
func (ddl) NumberAfter(from, to string) string {
	counter := func(t string) string {
		return fmt.Sprintf("(SELECT COALESCE(MAX(AUTO_INCREMENT), 1) FROM information_schema.TABLES\n                     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s)", quote(t))
	}
	return fmt.Sprintf(`-- Number %s's jobs above every id %s holds or has
-- given (and above its own counter), so that a job keeps one id in either
-- table; ALTER TABLE takes only a constant, so it is prepared from the value.
SET @queuegen_next_id = (
    SELECT GREATEST(COALESCE(MAX(id), 0) + 1,
                    %s,
                    %s)
    FROM %s);
SET @queuegen_alter = CONCAT('ALTER TABLE %s AUTO_INCREMENT = ', @queuegen_next_id);
PREPARE queuegen_alter FROM @queuegen_alter;
EXECUTE queuegen_alter;
DEALLOCATE PREPARE queuegen_alter;`, to, from, counter(from), counter(to), from, to)
}
