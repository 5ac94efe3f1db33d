// Package mysql holds the MySQL spec of the end-to-end tests, generated
// into package myjobs; the tests themselves are package e2e's.
package mysql

//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate
