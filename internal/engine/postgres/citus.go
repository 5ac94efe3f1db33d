package postgres

import (
	"fmt"
	"strings"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/spec"
)

// A distributed queue (distribute: {buckets: N}) is a Citus distributed
// table: every job has a bucket from 0 to N-1, the table is distributed by
// it, and each statement on a job or a bucket names the bucket, so Citus
// routes it to the one shard holding it (a router query). The facts below
// were checked on Citus 13.2 (docs/scaling-out.md):
//   - only a standalone table can be distributed (no INHERITS), and only
//     without triggers (the notify trigger is replaced by the accessor's
//     pg_notify on the coordinator);
//   - every primary key and unique index must include the bucket;
//   - the bucket leads every index a statement filters by bucket, since a
//     shard holds the rows of several buckets.

// BucketColumn is the distribution column of a distributed queue table.
const BucketColumn = spec.BucketColumn

// DistributedBy is "Citus": PostgreSQL distributes a queue's table with
// the Citus extension.
func (Engine) DistributedBy() string { return "Citus" }

// distributedColumns are the bookkeeping columns of a distributed queue
// table: id is a plain bigint the accessor computes from the table's
// sequence and the bucket (no default: the default would be evaluated on
// the worker for a COPY, not on the coordinator), and bucket follows it.
func distributedColumns(table string) []*catalog.Column {
	cols := bookkeeping("")
	cols[0] = &catalog.Column{Name: "id", Type: "bigint", NotNull: true,
		Comment: fmt.Sprintf("job id: nextval('%s_id_seq') * %d + bucket, so an id names its bucket", table, spec.MaxBuckets)}
	bucket := &catalog.Column{Name: BucketColumn, Type: "smallint", NotNull: true,
		Comment: "the distribution column: the shard holding the job"}
	return append([]*catalog.Column{cols[0], bucket}, cols[1:]...)
}

// distributedIndexes are the keys and indexes of a distributed queue
// table: those of a table on one node (indexes), each led by bucket, since
// Citus requires it in every unique index and every statement that reads
// them filters by one bucket.
func distributedIndexes(name string, q engine.QueueTable) []*catalog.Index {
	out := indexes(name, q, false)
	for _, i := range out {
		i.Columns = append([]string{BucketColumn}, i.Columns...)
		switch {
		case i.Primary:
		case strings.HasSuffix(i.Name, "_claim_idx"):
			i.Comment = "Serves the claim of one bucket: its predicate and key are the claim's WHERE and ORDER BY after bucket = $1, so a claim reads the first entries of its bucket and stops."
		case strings.HasSuffix(i.Name, "_lease_idx"):
			i.Comment = "Finds a bucket's leased jobs (expired leases, claimed again or reaped), and, read whole on each shard, those a restarting node held: the index holds only the jobs in flight."
		case strings.HasSuffix(i.Name, "_unique_key_idx"):
			i.Comment = "At most one unfinished job per unique key: a key's bucket is its hash, so one bucket holds all of a key's jobs, and Citus needs the bucket in a unique index anyway. Push relies on it with ON CONFLICT (bucket, unique_key) DO NOTHING."
		case strings.HasSuffix(i.Name, "_finished_idx"):
			i.Comment = "Finds a bucket's finished jobs for retention, oldest first, and the dead jobs for listing."
		}
	}
	return out
}

// Distribute distributes a new, empty queue table by bucket with
// create_distributed_table, colocated with the first distributed queue
// table (the same bucket of each queue on the same node).
func (d ddl) Distribute(t *catalog.Table) string {
	dist := t.Distribution
	var b strings.Builder
	engine.Lines(&b, engine.Comment(fmt.Sprintf("Spreads %s over the cluster's nodes by %s (Citus): each shard holds the rows of some of its %d buckets, "+
		"and a statement naming one bucket runs on that shard alone. The table is new and empty, so nothing is copied. "+
		"Its sequence %s stays on the coordinator, where the accessor takes ids from it.", t.Name, dist.Column, dist.Buckets, dist.Sequence)))
	if dist.ColocateWith == "" {
		fmt.Fprintf(&b, "SELECT create_distributed_table('%s', '%s');", d.q(t.Name), dist.Column)
	} else {
		fmt.Fprintf(&b, "SELECT create_distributed_table('%s', '%s', colocate_with => '%s');", d.q(t.Name), dist.Column, d.q(dist.ColocateWith))
	}
	return b.String()
}

// Reference makes one of queuegen's own tables a Citus reference table,
// copied to every node, so that a statement joining it or run on a worker
// finds it there, and its writes are replicated in one transaction. A
// table that is one already (a later migration, or a retried one) is left
// alone.
func (d ddl) Reference(t *catalog.Table) string {
	return fmt.Sprintf("-- %s becomes a reference table (a copy on every node), unless it is one already.\n"+
		"SELECT create_reference_table('%s')\nWHERE NOT EXISTS (SELECT FROM pg_dist_partition WHERE logicalrelid = '%s'::regclass);",
		t.Name, d.q(t.Name), d.q(t.Name))
}

// Unreference makes a reference table a table on the coordinator again.
func (d ddl) Unreference(t *catalog.Table) string {
	return fmt.Sprintf("SELECT undistribute_table('%s')\nWHERE EXISTS (SELECT FROM pg_dist_partition WHERE logicalrelid = '%s'::regclass);",
		d.q(t.Name), d.q(t.Name))
}

// createSequence creates a distributed table's id sequence, on the
// coordinator.
func (d ddl) createSequence(t *catalog.Table) string {
	var b strings.Builder
	engine.Lines(&b, engine.Comment(fmt.Sprintf("Numbers the jobs of %s: the accessor makes each id nextval * %d + bucket. "+
		"A sequence no column default uses stays on the coordinator, which every push goes through.", t.Name, spec.MaxBuckets)))
	fmt.Fprintf(&b, "CREATE SEQUENCE %s AS bigint;", d.q(t.Distribution.Sequence))
	return b.String()
}
