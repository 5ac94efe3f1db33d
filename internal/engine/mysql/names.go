package mysql

import "github.com/queuegen/queuegen/internal/spec"

// MySQL's naming rules for the spec. Names are at most 64 characters
// (MySQL 8.0 Reference Manual, 11.2.1 "Identifier Length Limits"; MariaDB's
// "Identifier Names" page says the same). Keyword is nil: queuegen writes
// MySQL names bare (no backticks), so MySQL's and MariaDB's reserved words
// (keywords.go) are refused by Check, beside the other things MySQL cannot
// serve; PostgreSQL's keywords, its pg_ prefix and its system columns are
// plain names here.
func init() {
	spec.RegisterRules(Name, spec.Rules{Title: "MySQL", MaxIdentifier: MaxIdentifier, PartitionsInside: true})
}
