package mysql

import (
	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/spec"
)

// RateLog is the rate log of a queue with a rate limit: each claim that
// takes jobs adds a row (one per key value with a per-key limit) and
// deletes the rows that have left the window, so the log holds about one
// window of claims. Rows have an AUTO_INCREMENT id for a primary key: two
// claims may share a time (a caller's ClaimAt), and InnoDB clusters rows
// by it in insertion order, which is time order. The window's count reads
// a covering index that leads with what it filters on: (claimed_at, jobs)
// for the queue, (key, claimed_at, jobs) for a value, one range a probe,
// no sort; with a key, claimed_at has an index of its own for the delete
// of the rows past the window. The count's index comes first after the
// primary key (Indexes[1]): the claim names it in FORCE INDEX.
func (Engine) RateLog(queue *catalog.Table, key *catalog.Column) *catalog.Table {
	name := queue.Name + spec.RateLogSuffix
	t := &catalog.Table{
		Name: name,
		Comment: engine.Comment("Rate log of queue table " + queue.Name + ": the claims of the last window, " +
			"which claims count to hold the rate limit; each claim adds its row and deletes those past the window."),
		Columns: []*catalog.Column{
			{Name: "id", Type: "BIGINT AUTO_INCREMENT", NotNull: true},
			{Name: "claimed_at", Type: "DATETIME(6)", NotNull: true, Comment: "when the claim ran (UTC)"},
		},
		Indexes: []*catalog.Index{{Name: "PRIMARY", Primary: true, Columns: []string{"id"}}},
	}
	if key == nil {
		t.Indexes = append(t.Indexes, &catalog.Index{Name: name + "_claimed_at_idx", Columns: []string{"claimed_at", "jobs"},
			Comment: "Counts the claims of the window (a covering range read), and finds those past it to delete."})
	} else {
		t.Columns = append(t.Columns, &catalog.Column{Name: key.Name, Type: key.Type, NotNull: true, Comment: "the claimed jobs' " + key.Name})
		t.Indexes = append(t.Indexes,
			&catalog.Index{Name: name + "_" + key.Name + "_idx", Columns: []string{key.Name, "claimed_at", "jobs"},
				Comment: "Counts a value's claims of the window: one covering range read per value."},
			&catalog.Index{Name: name + "_claimed_at_idx", Columns: []string{"claimed_at"},
				Comment: "Finds the claims past the window, to delete."})
	}
	t.Columns = append(t.Columns, &catalog.Column{Name: "jobs", Type: "INT", NotNull: true, Comment: "how many jobs the claim took"})
	return t
}
