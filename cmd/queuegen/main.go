// Command queuegen generates PostgreSQL job queues — goose migrations, sqlc
// queries and typed Go accessors — from a queuegen.yaml spec. See the
// README, or run queuegen help.
package main

import (
	"os"

	"github.com/queuegen/queuegen/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
