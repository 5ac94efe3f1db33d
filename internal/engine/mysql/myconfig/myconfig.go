// Package myconfig is the MySQL engine's connection settings, in a package
// of their own that needs nothing of queuegen's, so that the test helpers
// (internal/mytest) can set connections up as the engine does without
// importing it.
package myconfig

import (
	"time"

	"github.com/go-sql-driver/mysql"
)

// Config sets what queuegen's generated MySQL code needs of a connection:
// DATETIME read as time.Time (parseTime) in UTC (loc), arguments sent
// with the statement (interpolateParams: one round trip, not a prepare and
// an execute), and rows affected counted as changed, not as matched
// (clientFoundRows off: a periodic job's tick is pushed by the one caller
// whose upsert changed the row).
func Config(cfg *mysql.Config) *mysql.Config {
	cfg = cfg.Clone()
	cfg.ClientFoundRows = false
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	return cfg
}
