package queue

import "time"

// ClaimOption changes how Claim takes jobs.
type ClaimOption func(*ClaimOptions)

// ClaimOptions are the resolved claim options.
type ClaimOptions struct {
	// Now, when set, replaces the database clock when deciding which jobs
	// are due and when leases expire.
	Now *time.Time
	// Lease overrides the queue's lease duration when > 0.
	Lease time.Duration
}

// ClaimAt uses t instead of the database clock. Leases are best judged by
// the one database clock; use this only when every claimer passes the same
// notion of time, such as a simulation or a test.
func ClaimAt(t time.Time) ClaimOption { return func(o *ClaimOptions) { o.Now = &t } }

// LeaseFor overrides the queue's lease duration for this claim.
func LeaseFor(d time.Duration) ClaimOption { return func(o *ClaimOptions) { o.Lease = d } }
