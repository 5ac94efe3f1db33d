// Package reliability holds the fault suite: workers killed with SIGKILL,
// the database restarted, connections terminated, handlers that panic or
// hang, payloads that no longer decode, claims under every isolation
// level, a transaction holding back vacuum, and clock skew. Each scenario
// checks its counts and prints one line:
//
//	reliability <scenario>: <pushed> pushed, <completed> completed, <dead> dead, <lost> lost, <double> completed twice, ...
//
// Where a push can fail ambiguously (the database restarts under it),
// the scenario keeps the ids of acknowledged pushes: each must be
// accounted for, and a job the database holds beyond them is a push whose
// reply was lost, shown as "(N unacknowledged)" in pushed.
package reliability

//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate
