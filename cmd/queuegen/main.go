// Command queuegen generates PostgreSQL job queues — goose migrations, sqlc
// queries and typed Go accessors — from a queuegen.yaml spec. See the
// README, or run queuegen help.
package main

import (
	"os"

	"github.com/queuegen/queuegen/internal/bench"
	"github.com/queuegen/queuegen/internal/cli"
)

func main() {
	// queuegen bench --workload limits runs this executable again as its
	// worker processes.
	if code, ok := bench.ChildMain(); ok {
		os.Exit(code)
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
