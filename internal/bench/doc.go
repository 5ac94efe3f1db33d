// Package bench is queuegen bench: workloads that measure a generated
// queue (package jobs, from queuegen.yaml here) on a real PostgreSQL, to be
// read as ratios against ../shared/bench/pg-limit.sh run on the same
// database; and the same workloads on MySQL and MariaDB (package myjobs,
// from queuegen.mysql.yaml) and on SQL Server (package msjobs, from
// queuegen.sqlserver.yaml: built and grammar-checked, never run against a
// server here).
package bench

//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate
//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate -f queuegen.mysql.yaml
//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate -f queuegen.sqlserver.yaml
