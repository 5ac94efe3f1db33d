// Package citus holds the spec of the end-to-end tests for queues
// distributed by Citus (distribute), generated into package cjobs; the
// tests themselves are package e2e's, and run on a Citus cluster when
// built with the citus tag (see internal/dbtest.AndCitus).
package citus

//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate
