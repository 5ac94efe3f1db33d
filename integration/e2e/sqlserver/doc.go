// Package sqlserver holds the SQL Server spec of the end-to-end tests,
// generated into package msjobs; the tests themselves are package e2e's.
package sqlserver

//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate
