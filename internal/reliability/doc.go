// Package reliability holds the fault suite: workers killed with SIGKILL,
// the database restarted, connections terminated, handlers that panic or
// hang, payloads that no longer decode, claims under every isolation
// level, a transaction holding back vacuum, and clock skew. Each scenario
// checks its counts and prints one line:
//
//	reliability <scenario>: <pushed> pushed, <completed> completed, <dead> dead, <lost> lost, <double> completed twice
package reliability

//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate
