// Package reliability holds the fault suite: workers killed with SIGKILL
// (also while they work a queue with limits, sampled throughout, a
// backlog, fair claims, a rate, or an archive), the
// database restarted, connections terminated, claims by many
// claimers at once, holders stalled past their leases, claims meeting
// rows another transaction holds locked, handlers that panic or hang, payloads that no longer
// decode, claims under every isolation level, a transaction holding back
// vacuum, and clock skew. Each scenario checks its counts and prints one
// line:
//
//	reliability <scenario>: <pushed> pushed, <completed> completed, <dead> dead, <lost> lost, <double> completed twice, ...
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
package reliability

//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate
