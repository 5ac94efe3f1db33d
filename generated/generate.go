// Package generated is sqlc's Go code for queuegen's own queries
// (queries/*.sql) over its own tables (schema/*.sql): queuegen uses its own
// method. Regenerate with go generate; TestGeneratedIsFresh fails when it
// is stale.
package generated

//go:generate go run github.com/sqlc-dev/sqlc/cmd/sqlc generate -f ../sqlc.yaml
