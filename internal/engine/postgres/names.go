package postgres

import "github.com/queuegen/queuegen/internal/spec"

func init() {
	spec.RegisterRules(Name, spec.Rules{
		Title:         "PostgreSQL",
		MaxIdentifier: MaxIdentifier,
		Keyword:       func(name string) bool { return reservedWords[name] },
		KeywordIs:     "an SQL keyword",
		Prefixes:      map[string]string{"pg_": "which PostgreSQL reserves for its own objects"},
		SystemColumns: systemColumns,
		DefaultedColumns: map[string]string{
			"n": `"n" with a default: the query that evaluates a bulk push's defaults numbers its rows n; rename the column or drop its default`,
		},
	})
}

// reservedWords are the PostgreSQL 15 keywords that are not "unreserved"
// (categories R, T and C of pg_get_keywords(); the PostgreSQL manual's
// appendix C, "SQL Key Words"). A name from this set cannot be used
// everywhere in SQL without quoting, so the spec refuses it: queuegen
// writes identifiers unquoted so that the SQL reads the way a person
// writes it.
var reservedWords = map[string]bool{
	"all": true, "analyse": true, "analyze": true, "and": true, "any": true, "array": true, "as": true, "asc": true, "asymmetric": true, "authorization": true, "between": true, "bigint": true, "binary": true, "bit": true, "boolean": true, "both": true, "case": true, "cast": true, "char": true, "character": true, "check": true, "coalesce": true, "collate": true, "collation": true, "column": true, "concurrently": true, "constraint": true, "create": true, "cross": true, "current_catalog": true, "current_date": true, "current_role": true, "current_schema": true, "current_time": true, "current_timestamp": true, "current_user": true, "dec": true, "decimal": true, "default": true, "deferrable": true, "desc": true, "distinct": true, "do": true, "else": true, "end": true, "except": true, "exists": true, "extract": true, "false": true, "fetch": true, "float": true, "for": true, "foreign": true, "freeze": true, "from": true, "full": true, "grant": true, "greatest": true, "group": true, "grouping": true, "having": true, "ilike": true, "in": true, "initially": true, "inner": true, "inout": true, "int": true, "integer": true, "intersect": true, "interval": true, "into": true, "is": true, "isnull": true, "join": true, "lateral": true, "leading": true, "least": true, "left": true, "like": true, "limit": true, "localtime": true, "localtimestamp": true, "national": true, "natural": true, "nchar": true, "none": true, "normalize": true, "not": true, "notnull": true, "null": true, "nullif": true, "numeric": true, "offset": true, "on": true, "only": true, "or": true, "order": true, "out": true, "outer": true, "overlaps": true, "overlay": true, "placing": true, "position": true, "precision": true, "primary": true, "real": true, "references": true, "returning": true, "right": true, "row": true, "select": true, "session_user": true, "setof": true, "similar": true, "smallint": true, "some": true, "substring": true, "symmetric": true, "system_user": true, "table": true, "tablesample": true, "then": true, "time": true, "timestamp": true, "to": true, "trailing": true, "treat": true, "trim": true, "true": true, "union": true, "unique": true, "user": true, "using": true, "values": true, "varchar": true, "variadic": true, "verbose": true, "when": true, "where": true, "window": true, "with": true, "xmlattributes": true, "xmlconcat": true, "xmlelement": true, "xmlexists": true, "xmlforest": true, "xmlnamespaces": true, "xmlparse": true, "xmlpi": true, "xmlroot": true, "xmlserialize": true, "xmltable": true,
}

// systemColumns are PostgreSQL's hidden per-row columns; a table cannot have
// a column of the same name.
var systemColumns = map[string]bool{
	"tableoid": true, "xmin": true, "cmin": true, "xmax": true, "cmax": true, "ctid": true, "oid": true,
}
