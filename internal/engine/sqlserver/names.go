package sqlserver

import "github.com/queuegen/queuegen/internal/spec"

// SQL Server's naming rules for the spec, and its settings section
// (sqlserver: {online_index: …}). Names are at most 128 characters
// (sysname; Microsoft's "Database identifiers" page). Keyword is nil: the
// reserved keywords (keywords.go, from Microsoft's "Reserved keywords
// (Transact-SQL)") are refused by Check, beside the other things SQL
// Server cannot serve; PostgreSQL's keywords, its pg_ prefix and its
// system columns are plain names here.
func init() {
	spec.RegisterRules(Name, spec.Rules{
		Title:         "SQL Server",
		MaxIdentifier: MaxIdentifier,
		Settings: &spec.Settings{Key: Name, Bools: map[string]spec.BoolSetting{
			"online_index": {Default: true, Field: func(s *spec.Spec) *bool { return &s.SQLServer.OnlineIndex }},
		}},
	})
}
