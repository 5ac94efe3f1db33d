package sqlserver

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
)

// ddl writes SQL Server DDL for tables in schema.
//
// SQL Server's DDL is transactional, and goose runs each migration in a
// transaction, so a migration that fails midway changes nothing. goose
// sends each statement (or StatementBegin … StatementEnd block) as a batch
// of its own, and nothing queuegen writes must be first in its batch
// (CREATE SCHEMA runs through EXEC), so the statements also parse as one
// script, as the tests check with a T-SQL grammar.
//
// Keys and checks are named after their table (SQL Server keeps their
// names per schema, and renames them with the table). Column defaults are
// left for SQL Server to name: a default named after its table would keep
// the old name through a rename, and collide with a new table of that
// name; DropDefault and DropColumn look a default up by its column.
type ddl struct {
	schema string
	// offlineIndexes: see Engine.
	offlineIndexes bool
}

func (d ddl) q(name string) string { return Engine{}.Qualify(d.schema, name) }

// object is a name as sp_rename and OBJECT_ID take it: qualified as the
// DDL writes it, so that both find what the DDL created (in the login's
// default schema, when the spec names none).
func (d ddl) object(name string) string { return quote(d.q(name)) }

func (ddl) MaxIdentifier() int { return MaxIdentifier }

// CreateSchema creates the schema unless it exists. CREATE SCHEMA must be
// alone in its batch, so it runs through EXEC.
func (d ddl) CreateSchema() string {
	if d.schema == "" || d.schema == DefaultSchema {
		return ""
	}
	return fmt.Sprintf("IF SCHEMA_ID(%s) IS NULL\n    EXEC (N'CREATE SCHEMA %s');", quote(d.schema), d.schema)
}

// CreateTable writes CREATE TABLE with aligned columns, then the primary
// key, unique constraints and checks; a queue table's lock escalation is
// turned off.
func (d ddl) CreateTable(t *catalog.Table) string {
	var b strings.Builder
	engine.Lines(&b, t.Comment)
	fmt.Fprintf(&b, "CREATE TABLE %s (\n", d.q(t.Name))
	items := engine.ColumnLines(t.Columns)
	for _, i := range t.Indexes {
		if i.InTable() {
			items = append(items, constraint(i))
		}
	}
	for _, k := range t.Checks {
		items = append(items, fmt.Sprintf("CONSTRAINT %s CHECK (%s)", k.Name, k.Expr))
	}
	b.WriteString(engine.JoinItems(items))
	b.WriteString("\n);")
	if t.Column("run_after") != nil { // a queue table
		// A batch of 5,000 row locks or more (a bulk push, a purge)
		// would otherwise escalate to a table lock, which READPAST
		// cannot pass: every claim would wait for it.
		fmt.Fprintf(&b, "\n-- No lock escalation: a table lock would stop every claim (READPAST passes\n-- row locks only).\nALTER TABLE %s SET (LOCK_ESCALATION = DISABLE);", d.q(t.Name))
	}
	out := engine.GooseGuard(b.String(), engine.Defaults(t.Columns)...)
	for _, o := range t.Options {
		if o.Name == IDsAfter {
			out += "\n\n" + d.reseed(t.Name, o.Value)
		}
	}
	return out
}

// reseed starts the identity of backlog above every id its queue table
// has given (IDENT_CURRENT, the last one, or the seed of a table never
// written), so that the jobs a scheduler step moves keep ids no other job
// of the queue has. DBCC CHECKIDENT takes the value as a variable; it runs
// through sp_executesql, with the value as its parameter, because the
// offline grammar check (tsql-check) has no rule for DBCC CHECKIDENT.
func (d ddl) reseed(backlog, queue string) string {
	return fmt.Sprintf("-- The backlog's ids continue the queue table's: a moved job keeps its id.\n"+
		"-- +goose StatementBegin\nDECLARE @ids_after BIGINT = IDENT_CURRENT(N'%s') + 1;\n"+
		"EXEC sp_executesql N'DBCC CHECKIDENT (N''%s'', RESEED, @seed);', N'@seed BIGINT', @seed = @ids_after;\n-- +goose StatementEnd",
		d.q(queue), d.q(backlog))
}

// MoveBacklog moves every job of a backlog into its queue table, ids and
// all (IDENTITY_INSERT), for a queue that no longer has one; the backlog is
// dropped next. TABLOCKX keeps pushes out of the backlog meanwhile.
func (d ddl) MoveBacklog(backlog, queue string, columns []string) string {
	list := func(indent string) string {
		return strings.Join(engine.Wrap(indent, strings.Join(columns, ", "), 80), "\n")
	}
	return fmt.Sprintf("SET IDENTITY_INSERT %s ON;\nINSERT INTO %s (\n%s\n)\nSELECT\n%s\nFROM %s WITH (TABLOCKX);\nSET IDENTITY_INSERT %s OFF;",
		d.q(queue), d.q(queue), list("    "), list("    "), d.q(backlog), d.q(queue))
}

// constraint declares a primary key or unique constraint in CREATE TABLE.
func constraint(i *catalog.Index) string {
	cols := strings.Join(i.Columns, ", ")
	if i.Primary {
		return fmt.Sprintf("CONSTRAINT %s PRIMARY KEY CLUSTERED (%s)", i.Name, cols)
	}
	return fmt.Sprintf("CONSTRAINT %s UNIQUE (%s)", i.Name, cols)
}

// CreateIndex writes CREATE INDEX, filtered where the index has a
// predicate, with the comment of what it serves.
func (d ddl) CreateIndex(t *catalog.Table, i *catalog.Index) string {
	if i.InTable() {
		return ""
	}
	var b strings.Builder
	engine.Lines(&b, engine.Comment(i.Comment))
	b.WriteString(createIndex(d.q(t.Name), i, "") + ";")
	return b.String()
}

// createIndex is CREATE INDEX with options with (or none).
func createIndex(table string, i *catalog.Index, with string) string {
	u := ""
	if i.Unique {
		u = "UNIQUE "
	}
	s := fmt.Sprintf("CREATE %sINDEX %s ON %s (%s)", u, i.Name, table, strings.Join(i.Columns, ", "))
	if i.Where != "" {
		s += "\n    WHERE " + i.Where
	}
	if with != "" {
		s += "\n    WITH (" + with + ")"
	}
	return s
}

func (d ddl) DropTable(t *catalog.Table) string { return "DROP TABLE " + d.q(t.Name) + ";" }

// queuegen does not use Service Broker: the engine refuses notify, so
// there are no notify functions or triggers, no sequences (ids are
// IDENTITY) and no storage options.
func (ddl) CreateFunction(string) string                       { return "" }
func (ddl) DropFunction(string) string                         { return "" }
func (ddl) CreateTrigger(*catalog.Table) string                { return "" }
func (ddl) DropTrigger(*catalog.Table, string) string          { return "" }
func (ddl) RenameSequence(string, string) string               { return "" }
func (ddl) RenameTrigger(string, string, string) string        { return "" }
func (ddl) SetOptions(*catalog.Table, []catalog.Option) string { return "" }
func (ddl) ResetOptions(*catalog.Table, []string) string       { return "" }

func (d ddl) Register(q *catalog.Queue) string {
	return fmt.Sprintf("INSERT INTO %s (name, table_name, mode)\nVALUES (%s, %s, '%s');", d.q(RegistryTable), quote(q.Name), quote(q.Table.Name), q.Mode)
}

func (d ddl) Unregister(name string) string {
	return fmt.Sprintf("DELETE FROM %s WHERE name = %s;", d.q(RegistryTable), quote(name))
}

func (d ddl) Reregister(from, to *catalog.Queue) string {
	return fmt.Sprintf("UPDATE %s\nSET name = %s, table_name = %s, mode = '%s'\nWHERE name = %s;",
		d.q(RegistryTable), quote(to.Name), quote(to.Table.Name), to.Mode, quote(from.Name))
}

func (d ddl) ReleaseLeases(t *catalog.Table) string {
	return engine.ReleaseLeasesSQL(d.q(t.Name))
}

// RenameTable, RenameIndex, RenameConstraint and RenameColumn use
// sp_rename, which changes only the catalog.
func (d ddl) RenameTable(from, to string) string {
	return fmt.Sprintf("EXEC sp_rename %s, %s;", d.object(from), quote(to))
}

func (d ddl) RenameIndex(table, from, to string) string {
	return fmt.Sprintf("EXEC sp_rename %s, %s, N'INDEX';", d.object(table+"."+from), quote(to))
}

func (d ddl) RenameConstraint(_, from, to string) string {
	return fmt.Sprintf("EXEC sp_rename %s, %s, N'OBJECT';", d.object(from), quote(to))
}

func (d ddl) RenameColumn(t *catalog.Table, from, to string) string {
	return fmt.Sprintf("EXEC sp_rename %s, %s, N'COLUMN';", d.object(t.Name+"."+from), quote(to))
}

// AddColumn adds a column. A nullable column, or a NOT NULL one with a
// constant default, is added by changing only the catalog (SQL Server
// 2012 and later, Enterprise edition; other editions write the default
// into every row).
func (d ddl) AddColumn(t *catalog.Table, c *catalog.Column) string {
	def := c.Name + " " + c.Type
	if c.NotNull {
		def += " NOT NULL"
	}
	if c.Default != "" {
		def += " DEFAULT " + c.Default
	}
	return engine.GooseGuard(fmt.Sprintf("ALTER TABLE %s ADD %s;", d.q(t.Name), def), c.Default)
}

// AddRewrites: a default evaluated per row (the clock, NEWID()) is written
// into every existing row.
func (ddl) AddRewrites(c *catalog.Column) string {
	if strings.Contains(c.Default, "SYSUTCDATETIME") || strings.Contains(c.Default, "NEWID") {
		return "its default " + c.Default + " is evaluated for every existing row, which SQL Server does by writing every row under a schema lock"
	}
	return ""
}

// dropDefault drops column's DEFAULT constraint, if it has one, whatever
// its name: a batch of its own, which looks the name up.
func (d ddl) dropDefault(t *catalog.Table, column string) string {
	return fmt.Sprintf(`-- +goose StatementBegin
DECLARE @default sysname = (
    SELECT d.name
    FROM sys.default_constraints AS d
    JOIN sys.columns AS c ON c.object_id = d.parent_object_id AND c.column_id = d.parent_column_id
    WHERE d.parent_object_id = OBJECT_ID(%s) AND c.name = %s
);
IF @default IS NOT NULL
BEGIN
    DECLARE @drop nvarchar(max) = N'ALTER TABLE %s DROP CONSTRAINT ' + QUOTENAME(@default);
    EXEC sp_executesql @drop;
END;
-- +goose StatementEnd`, d.object(t.Name), quote(column), d.q(t.Name))
}

func (d ddl) DropColumn(t *catalog.Table, name string) string {
	return d.dropDefault(t, name) + fmt.Sprintf("\nALTER TABLE %s DROP COLUMN %s;", d.q(t.Name), name)
}

// alter redefines column c of t, as ALTER COLUMN needs its type and
// nullability whole.
func (d ddl) alter(t *catalog.Table, c *catalog.Column) string {
	null := "NULL"
	if c.NotNull {
		null = "NOT NULL"
	}
	return fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s %s %s;", d.q(t.Name), c.Name, c.Type, null)
}

func (d ddl) ChangeType(t *catalog.Table, c *catalog.Column, from string) string {
	if ok, _ := d.Widens(from, c.Type); ok {
		return "-- Widening an NVARCHAR: SQL Server changes only the catalog.\n" + d.alter(t, c)
	}
	return fmt.Sprintf("-- Narrowing back reads every row, and fails if a value no longer fits %s.\n%s", c.Type, d.alter(t, c))
}

// column is t's column name, to redefine it whole.
func column(t *catalog.Table, name string) *catalog.Column {
	if c := t.Column(name); c != nil {
		return c
	}
	panic("sqlserver: no column " + name + " in " + t.Name)
}

func (d ddl) SetNotNull(t *catalog.Table, name string) string {
	c := *column(t, name)
	c.NotNull = true
	return "-- Reads every row, and fails if NULLs were stored meanwhile.\n" + d.alter(t, &c)
}

func (d ddl) DropNotNull(t *catalog.Table, name string) string {
	c := *column(t, name)
	c.NotNull = false
	return d.alter(t, &c)
}

// SetDefault and DropDefault change only the catalog.
func (d ddl) SetDefault(t *catalog.Table, name, def string) string {
	return d.dropDefault(t, name) + "\n" + engine.GooseGuard(fmt.Sprintf("ALTER TABLE %s ADD DEFAULT %s FOR %s;", d.q(t.Name), def, name), def)
}

func (d ddl) DropDefault(t *catalog.Table, name string) string { return d.dropDefault(t, name) }

// CreateIndexOnline builds an index of a table that holds rows: ONLINE =
// ON, so that pushes and claims go on (Enterprise edition and Azure SQL;
// Standard and Express refuse the statement, error 1712, and the
// migration changes nothing), or, with sqlserver.online_index: false in
// the spec, offline, which any edition can, holding a shared lock on the
// table for the whole build. A failed build leaves nothing behind, and the
// statement does nothing if the index exists, so it can run again.
func (d ddl) CreateIndexOnline(t *catalog.Table, i *catalog.Index) string {
	comment, with := onlineComment, "ONLINE = ON"
	if d.offlineIndexes {
		comment, with = offlineComment, ""
	}
	return comment + fmt.Sprintf("IF INDEXPROPERTY(OBJECT_ID(%s), %s, 'IndexID') IS NULL\n    %s;",
		d.object(t.Name), quote(i.Name), strings.ReplaceAll(createIndex(d.q(t.Name), i, with), "\n", "\n    "))
}

const (
	onlineComment = `-- ONLINE = ON: pushes and claims go on during the build. Enterprise edition
-- and Azure SQL only: Standard and Express refuse it (error 1712) and the
-- migration changes nothing; for them, set sqlserver.online_index: false in
-- the spec before generating (see the README's SQL Server section).
`
	offlineComment = `-- Offline (sqlserver.online_index: false in the spec): the build holds a
-- shared lock on the table, so pushes, claims, completions and heartbeats
-- wait until it ends (reads do not). Run it when the queue can pause.
`
)

// DropIndexOnline drops an index, which for a nonclustered index changes
// only the catalog (ONLINE applies to clustered indexes only).
func (d ddl) DropIndexOnline(t *catalog.Table, name string) string {
	return fmt.Sprintf("DROP INDEX IF EXISTS %s ON %s;", name, d.q(t.Name))
}

func (d ddl) RenameIndexOnline(table, from, to string) string { return d.RenameIndex(table, from, to) }

// OnlineIndexesNeedNoTransaction: SQL Server builds an index online inside
// a transaction as well.
func (ddl) OnlineIndexesNeedNoTransaction() bool { return false }

var nvarcharRE = regexp.MustCompile(`^NVARCHAR\((\d+)\)$`)

// Widens reports whether SQL Server changes type from to type to by
// changing only the catalog: a longer NVARCHAR(n). Any other change reads
// or rewrites every row under a schema lock.
func (ddl) Widens(from, to string) (bool, string) {
	f, t := nvarcharRE.FindStringSubmatch(from), nvarcharRE.FindStringSubmatch(to)
	const why = "SQL Server cannot make this change in the catalog alone: it would read or rewrite every row under a schema modification lock"
	if f == nil || t == nil {
		return false, why
	}
	n, _ := strconv.Atoi(f[1])
	m, _ := strconv.Atoi(t[1])
	if m < n {
		return false, why
	}
	return true, ""
}

// AddCheck adds a CHECK constraint to a table that holds rows WITH
// NOCHECK: only rows written from now on are checked, so the statement
// changes only the catalog instead of reading every row under a schema
// lock that would stop pushes and claims; the constraint is marked not
// trusted until a DBA validates the rows already there.
func (d ddl) AddCheck(t *catalog.Table, k *catalog.Check) string {
	return fmt.Sprintf(`-- WITH NOCHECK: rows written from now on are checked; the rows already there
-- are not read (that would hold a schema lock on the table while it reads
-- them all). To check those too, when the queue can pause:
--   ALTER TABLE %[1]s WITH CHECK CHECK CONSTRAINT %[2]s;
ALTER TABLE %[1]s WITH NOCHECK ADD CONSTRAINT %[2]s CHECK (%[3]s);`, d.q(t.Name), k.Name, k.Expr)
}

// DropCheck drops a CHECK constraint, which changes only the catalog.
func (d ddl) DropCheck(t *catalog.Table, name string) string {
	return fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT %s;", d.q(t.Name), name)
}

// SessionOptions are the SET options SQL Server requires of a session that
// creates or writes a table with a filtered index (error 1934 otherwise).
// Drivers set them, but classic sqlcmd leaves QUOTED_IDENTIFIER off, so a
// migration run through it would fail. A SET lasts for the connection, and
// goose runs a migration's statements in one transaction on one
// connection, so each migration sets them first, in Up and in Down.
func (ddl) SessionOptions() string {
	return `-- The session options filtered indexes need (SQL Server refuses to create
-- or write one without them, error 1934); drivers set them, classic sqlcmd
-- leaves QUOTED_IDENTIFIER off. They last for the connection.
SET ANSI_NULLS, ANSI_PADDING, ANSI_WARNINGS, ARITHABORT, CONCAT_NULL_YIELDS_NULL, QUOTED_IDENTIFIER ON;
SET NUMERIC_ROUNDABORT OFF;`
}
