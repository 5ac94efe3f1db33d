// Package generated is sqlc's Go code for queuegen's own queries
// (../queries/*.sql) over its own tables (the product module's
// schema/*.sql): queuegen uses its own method. It is a fixture of the
// integration module; nothing in the product module imports it. Regenerate with go generate; TestGeneratedIsFresh fails when it
// is stale.
package generated

//go:generate go run github.com/sqlc-dev/sqlc/cmd/sqlc generate -f ../sqlc.yaml
