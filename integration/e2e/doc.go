// Package e2e holds the end-to-end tests: the queues of queuegen.yaml,
// generated into package jobs, driven against a real PostgreSQL.
package e2e

//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate
