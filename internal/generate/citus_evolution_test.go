package generate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queuegen/queuegen/internal/generate"
)

const citusBase = `version: 1
package: {name: jobs, dir: jobs}
migrations: migrations
queries: queries
queues:
  - name: sms
    inherits: false
    distribute: {buckets: 16}
    payload:
      columns:
        phone: text
  - name: email
    inherits: false
    payload:
      columns:
        recipient: text
`

// generateStep writes spec into specPath and generates it, returning the
// error, and the new migration's text when it wrote one.
func generateStep(t *testing.T, specPath, spec string) (string, error) {
	t.Helper()
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(specPath)
	before := listFiles(t, dir)
	out, err := generate.Generate(specPath, generate.Options{})
	if err != nil {
		return "", err
	}
	if _, err := out.Write(); err != nil {
		t.Fatal(err)
	}
	for p, data := range listFiles(t, dir) {
		if _, ok := before[p]; !ok && filepath.Base(filepath.Dir(p)) == "migrations" && strings.HasSuffix(p, ".sql") {
			return data, nil
		}
	}
	return "", nil
}

// TestCitusEvolution: turning distribution on or off for an existing
// queue, and changing its bucket count, are refused with the reason;
// ordinary changes of a distributed queue are plain ALTERs (Citus
// propagates them to the shards); a distributed queue added later is
// colocated with the first, and a table of queuegen's own added later is
// made a reference table, while those already made one are not touched.
func TestCitusEvolution(t *testing.T) {
	specPath := filepath.Join(projectDir(t), "queuegen.yaml")
	first, err := generateStep(t, specPath, citusBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SELECT create_distributed_table('sms_queue', 'bucket');", "SELECT create_reference_table('queuegen_queues')",
		"CREATE SEQUENCE sms_queue_id_seq AS bigint;", "CONSTRAINT sms_queue_pkey PRIMARY KEY (bucket, id)"} {
		if !strings.Contains(first, want) {
			t.Errorf("first migration lacks %q", want)
		}
	}
	if strings.Contains(first, "create_distributed_table('email_queue'") {
		t.Error("first migration distributes email_queue, which is not distributed")
	}

	refusals := []struct{ name, from, to, want string }{
		{"distribute added", "  - name: email\n    inherits: false\n", "  - name: email\n    inherits: false\n    distribute: {buckets: 16}\n",
			"queue email: distribute added: a distributed queue's table has a bucket in its primary key and its ids carry their bucket"},
		{"distribute removed", "    distribute: {buckets: 16}\n", "",
			"queue sms: distribute removed: the jobs of every bucket would have to be gathered onto the coordinator"},
		{"buckets changed", "buckets: 16", "buckets: 32",
			"queue sms: distribute.buckets 16 → 32: a job's bucket is its unique key's hash modulo the bucket count"},
	}
	for _, c := range refusals {
		_, err := generateStep(t, specPath, strings.Replace(citusBase, c.from, c.to, 1))
		if err == nil {
			t.Errorf("%s: not refused", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: message lacks %q:\n%v", c.name, c.want, err)
		}
	}

	// An ordinary change: a plain ALTER, nothing Citus-specific.
	spec := strings.Replace(citusBase, "        phone: text\n", "        phone: text\n        note: {type: text, nullable: true}\n", 1)
	mig, err := generateStep(t, specPath, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mig, "ALTER TABLE sms_queue ADD COLUMN IF NOT EXISTS note text;") || strings.Contains(mig, "create_") {
		t.Errorf("adding a column to a distributed queue:\n%s", mig)
	}

	// A distributed queue with periodic jobs added later: colocated with
	// the first; the periodic table is new, so made a reference table, and
	// the registry and nodes tables are left as they are.
	spec += `  - name: push
    inherits: false
    distribute: {buckets: 16}
    periodic:
      - {name: hourly, every: 1h, payload: {token: t}}
    payload:
      columns:
        token: text
`
	mig, err = generateStep(t, specPath, spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SELECT create_distributed_table('push_queue', 'bucket', colocate_with => 'sms_queue');", "SELECT create_reference_table('queuegen_periodic')"} {
		if !strings.Contains(mig, want) {
			t.Errorf("adding a distributed queue with periodic jobs: lacks %q:\n%s", want, mig)
		}
	}
	if strings.Contains(mig, "create_reference_table('queuegen_queues')") || strings.Contains(mig, "create_reference_table('queuegen_nodes')") {
		t.Errorf("a later migration makes reference tables of tables that are already:\n%s", mig)
	}
}
