// Package schema holds queuegen's own tables, as SQL. sqlc compiles the
// project's queries against them (see integration/sqlc: its sqlc.yaml and package generated). The
// migrations queuegen emits create the same tables through the engine's DDL
// builder; a test checks that it writes exactly this SQL, so the two cannot
// drift apart.
package schema

import _ "embed"

// Registry is the DDL of the queue registry table, queuegen_queues.
//
//go:embed queuegen_queues.sql
var Registry string

// RegistryTable is the registry table's name as written in Registry.
const RegistryTable = "queuegen_queues"

// Periodic is the DDL of the periodic-ticks table, queuegen_periodic,
// created when a queue declares periodic jobs.
//
//go:embed queuegen_periodic.sql
var Periodic string

// PeriodicTable is the periodic-ticks table's name as written in Periodic.
const PeriodicTable = "queuegen_periodic"

// Nodes is the DDL of the nodes table, queuegen_nodes: the worker
// processes of each queue and their heartbeats.
//
//go:embed queuegen_nodes.sql
var Nodes string

// NodesTable is the nodes table's name as written in Nodes.
const NodesTable = "queuegen_nodes"
