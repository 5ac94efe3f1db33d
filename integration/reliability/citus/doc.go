// Package citus holds the Citus spec of the reliability suite (every queue
// distributed), generated into package cjobs; the tests themselves are
// package reliability's, and run on a Citus cluster when built with the
// citus tag (see internal/dbtest.AndCitus).
package citus

//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate
