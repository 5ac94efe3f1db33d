package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/queuegen/queuegen/dashboard"
)

// TestNewSQLServer: New takes a sqlserver:// address and connects (here
// to a closed port), failing at once without the password. No SQL Server
// runs here: the pages themselves are not served on one.
func TestNewSQLServer(t *testing.T) {
	start := time.Now()
	_, err := dashboard.New(context.Background(), "sqlserver://sa:s3cret@127.0.0.1:1?database=app", dashboard.Schema("jobs"))
	if err == nil || !strings.Contains(err.Error(), "cannot connect") || strings.Contains(err.Error(), "s3cret") || time.Since(start) > 15*time.Second {
		t.Errorf("New on a closed SQL Server port = %v after %s", err, time.Since(start))
	}
}
