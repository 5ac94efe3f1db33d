//go:build !queuegen_mutation

package queue

// mutant is false: the deliberate bugs of the fault suite's mutation tests
// exist only in builds with the queuegen_mutation tag (see mutation_on.go).
func mutant(string) bool { return false }
