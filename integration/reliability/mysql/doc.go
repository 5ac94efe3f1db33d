// Package mysql holds the MySQL spec of the reliability suite, generated
// into package myjobs; the tests themselves are package reliability's.
package mysql

//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate
