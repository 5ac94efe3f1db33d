package pgximpl

import (
	"testing"
	"time"
)

// TestPartitionDay: a daily partition's day is read from its name's
// suffix, whatever the prefix (a renamed archive's partitions keep the old
// one); other partitions (the default) have none.
func TestPartitionDay(t *testing.T) {
	for name, want := range map[string]string{
		"email_queue_archive_p20261124":     "2026-11-24",
		"old_name_archive_p20251231":        "2025-12-31",
		"email_queue_archive_default":       "",
		"email_queue_archive_p2026112":      "",
		"email_queue_archive_pABCDEFGH":     "",
		"email_queue_archive_p20261124_old": "",
	} {
		day, ok := partitionDay(name)
		got := ""
		if ok {
			got = day.Format(time.DateOnly)
		}
		if got != want {
			t.Errorf("partitionDay(%q) = %q, want %q", name, got, want)
		}
	}
}
