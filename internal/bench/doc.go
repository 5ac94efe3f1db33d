// Package bench is queuegen bench: workloads that measure a generated
// queue (package jobs, from queuegen.yaml here) on a real PostgreSQL, to be
// read as ratios against ../shared/bench/pg-limit.sh run on the same
// database.
package bench

//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate
//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate -f queuegen.mysql.yaml
