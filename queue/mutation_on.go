//go:build queuegen_mutation

package queue

import (
	"os"
	"sync/atomic"
)

// mutant reports whether the deliberate bug named is switched on, in a
// build with the queuegen_mutation tag, by QUEUEGEN_MUTATION. The fault
// suite (integration/reliability) runs itself with each of them and must
// fail: a suite that passes with the runtime broken proves nothing.
//
//   - skip-handler: every 7th job is completed without calling its handler;
//   - drop-refused: a batch of results the database refused is dropped
//     instead of retried;
//   - error-completes: a handler's error completes the job;
//   - double-run: every 11th job's handler runs twice.
func mutant(name string) bool {
	if os.Getenv("QUEUEGEN_MUTATION") != name {
		return false
	}
	switch name {
	case "skip-handler":
		return every7.Add(1)%7 == 0
	case "double-run":
		return every11.Add(1)%11 == 0
	}
	return true
}

var every7, every11 atomic.Int64
