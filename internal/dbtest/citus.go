package dbtest

import (
	"slices"

	"github.com/queuegen/queuegen/internal/pgtest"
)

// Citus is the suites' name for PostgreSQL distributed by Citus: a
// PostgreSQL database (the spec's engine is postgresql) whose queues
// declare distribute, on the coordinator of pgtest.EnvCitusURL. It is a
// name of the suites, not an engine of the spec.
const Citus = "citus"

// citusSelected is set by the citus build tag (citus_tag.go): go test
// -tags citus runs the suites on a Citus cluster too, and fails, saying
// how to provide one, when pgtest.EnvCitusURL names none. Without the tag
// (as in CI, which has no cluster) no test selects Citus.
var citusSelected bool

// CitusSelected reports whether this test binary was built with the citus
// tag.
func CitusSelected() bool { return citusSelected }

// AndCitus is engines with Citus added when the test binary was built with
// the citus tag (and this is not the run through PgBouncer).
func AndCitus(engines []string) []string {
	if !citusSelected || pgtest.ViaPgBouncer() {
		return engines
	}
	return slices.Concat(engines, []string{Citus})
}
