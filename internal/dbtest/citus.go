package dbtest

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

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

// citusRows numbers the rows CitusInsert gives a bucket, process-wide, so
// that a test's rows spread over buckets.
var citusRows atomic.Int64

// citusInsert matches the head of an INSERT into a queue table: the
// table's name and the opening parenthesis of its column list.
var citusInsert = regexp.MustCompile(`^(\s*INSERT\s+INTO\s+)([a-z_][a-z0-9_]*_queue)\s*\(`)

// CitusInsert is stmt, an INSERT INTO <name>_queue (columns) VALUES (…),
// … or … SELECT … of a test's fixture rows, made to give each row what a
// distributed queue's table takes from its accessor, not from a column
// default: a bucket, and the id nextval('<name>_queue_id_seq') * 1024 +
// bucket (so that id % 1024 names the bucket, as the operations commands
// read it). The rows of a VALUES list go to buckets 0 to 7 in turn (every
// test spec has at least 8), the rows of a SELECT to one of them.
// Statements of any other shape, or that give a bucket of their own, are
// returned as they are.
func CitusInsert(stmt string) string {
	m := citusInsert.FindStringSubmatchIndex(stmt)
	if m == nil {
		return stmt
	}
	seq := stmt[m[4]:m[5]] + "_id_seq"
	row := func() string {
		b := strconv.FormatInt(citusRows.Add(1)%8, 10)
		return "nextval('" + seq + "') * 1024 + " + b + ", " + b + ", "
	}
	var out strings.Builder
	out.WriteString(stmt[:m[1]])
	out.WriteString("id, bucket, ")
	rest := stmt[m[1]:]
	end := strings.IndexByte(rest, ')')
	if end < 0 || slices.Contains(strings.Fields(strings.ReplaceAll(rest[:end], ",", " ")), "bucket") {
		return stmt
	}
	out.WriteString(rest[:end+1])
	rest = rest[end+1:]
	trimmed := strings.TrimLeft(rest, " \t\n")
	out.WriteString(rest[:len(rest)-len(trimmed)])
	switch upper := strings.ToUpper(trimmed); {
	case strings.HasPrefix(upper, "SELECT "):
		out.WriteString(trimmed[:len("SELECT ")] + row() + trimmed[len("SELECT "):])
	case strings.HasPrefix(upper, "VALUES"):
		depth, quoted := 0, false
		for _, r := range trimmed {
			out.WriteRune(r)
			switch {
			case r == '\'':
				quoted = !quoted
			case quoted:
			case r == '(':
				if depth == 0 {
					out.WriteString(row())
				}
				depth++
			case r == ')':
				depth--
			}
		}
	default:
		return stmt
	}
	return out.String()
}
