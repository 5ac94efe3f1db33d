// Package reliability holds the fault suite: workers killed with SIGKILL
// (also while they work a queue with limits, sampled throughout, a
// backlog, fair claims, a rate, or an archive), the
// database restarted, connections terminated, claims by many
// claimers at once, holders stalled past their leases, worker processes
// frozen (SIGSTOP) past their leases, claims meeting
// rows another transaction holds locked, handlers that panic or hang, payloads that no longer
// decode, claims under every isolation level, a transaction holding back
// vacuum, and clock skew. Each scenario checks its counts and prints one
// line:
//
//	reliability <scenario>: <pushed> pushed, <completed> completed, <dead> dead, <lost> lost, <double> completed twice, ...
//
// A job handled twice must have been handled first by a worker process
// that was killed, or by one that saw the job's lease run out itself
// before it was done with it: workerproc logs each lapse it sees, by its
// own clock, in table lapsed, and the SIGKILL scenarios count those
// re-deliveries apart ("after a lapse of the lease its holder saw
// itself"), which a process starved of CPU past its lease on a loaded
// machine causes. Any other re-delivery, of a job whose holder still held
// a live lease, fails the scenario.
//
// Where a push can fail ambiguously (the database restarts under it),
// the scenario keeps the ids of acknowledged pushes: each must be
// accounted for, and a job the database holds beyond them is a push whose
// reply was lost, shown as "(N unacknowledged)" in pushed.
//
// The scenarios that are not about one engine (workers killed, database
// restarted, a worker started while it is down, connections terminated,
// concurrent claimers, stalled holders, locked rows, handler failures) run on PostgreSQL and on MySQL/MariaDB, in subtests named
// after the engine, with the MySQL spec of mysql/queuegen.yaml (generated
// into package myjobs); their MySQL lines read "<scenario> (mysql)". The
// others are about PostgreSQL (isolation levels, vacuum, PgBouncer,
// limits) or
// so far run on it only. The run through PgBouncer repeats the
// PostgreSQL scenarios only.
//
// Built with the citus tag (go test -tags citus) and with
// $QUEUEGEN_CITUS_URL naming a Citus coordinator, workers killed and
// connections terminated run on the cluster too, with the spec of
// citus/queuegen.yaml (queues work and event distributed by bucket,
// generated into package cjobs), in subtests named citus, each in a
// schema of its own; their lines read "<scenario> (citus)". Citus refuses
// triggers on a distributed table unless citus.enable_unsafe_triggers is
// on: with it, the audit's triggers run on every shard and log to tables
// local to the node holding it, in the statement's transaction, and the
// tallies gather every node's log on the coordinator (citusAudit;
// TestCitusAudit checks it sees both worker nodes). TestWorkerNodeRestarted
// (Citus only) restarts a worker node of the cluster mid-drain with the
// command of $QUEUEGEN_CITUS_RESTART; it runs before the parallel
// scenarios, not beside them. The scenarios of limits, fair claims,
// rates, backlogs, archives and transaction mode, which a distributed
// queue refuses, do not run there. CI has no cluster and builds without
// the tag: none of this runs there.
package reliability

//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate
