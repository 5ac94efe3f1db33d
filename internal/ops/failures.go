package ops

import (
	"time"

	"github.com/queuegen/queuegen/queue/queueimpl"
)

// Failure is one of a job's errors with when and at which attempt it was
// recorded, as the jobs command shows it.
type Failure struct {
	// At is when the error was recorded, by the database's clock; nil for
	// an error recorded before the table had its failures column.
	At *time.Time `json:"at"`
	// Attempt is the attempt that failed; nil where At is.
	Attempt *int32 `json:"attempt"`
	// Error is the error's text, less the stack of a panic.
	Error string `json:"error"`
	// Stack is the goroutine's stack where the handler panicked.
	Stack string `json:"stack,omitempty"`
}

// failuresOf pairs errs, a job's errors, with doc, its failures column
// (nil when NULL or when the table has none), as the runtime does.
func failuresOf(errs []string, doc []byte) []Failure {
	out := []Failure{}
	for _, f := range queueimpl.Failures(errs, doc) {
		o := Failure{Error: f.Error, Stack: f.Stack}
		if !f.At.IsZero() {
			at, attempt := f.At, f.Attempt
			o.At, o.Attempt = &at, &attempt
		}
		out = append(out, o)
	}
	return out
}
