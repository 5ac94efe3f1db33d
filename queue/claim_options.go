package queue

import "time"

// ClaimOption changes how Claim takes jobs. An option given a value out of
// its range makes Claim return an *OptionError, wrapping ErrOption, before
// any statement.
type ClaimOption interface {
	applyClaim(*ClaimOptions) error
}

type claimOption func(*ClaimOptions) error

func (f claimOption) applyClaim(o *ClaimOptions) error { return f(o) }

// ClaimOptions are the resolved claim options.
type ClaimOptions struct {
	// Now, when set, replaces the database clock when deciding which jobs
	// are due and when leases expire.
	Now *time.Time
	// Lease overrides the queue's lease duration when > 0.
	Lease time.Duration
}

// ApplyClaimOptions applies opts to o in order; it stops at the first bad
// one and returns its error. Generated accessors call it (through
// queueimpl.ResolveClaim).
func ApplyClaimOptions(o *ClaimOptions, opts []ClaimOption) error {
	for _, opt := range opts {
		if opt == nil {
			return badOption("ClaimOption", nil, "must not be nil")
		}
		if err := opt.applyClaim(o); err != nil {
			return err
		}
	}
	return nil
}

// ClaimAt uses t instead of the database clock. Leases are best judged by
// the one database clock; use this only when every claimer passes the same
// notion of time, such as a simulation or a test. t must not be the zero
// time.
func ClaimAt(t time.Time) ClaimOption {
	return claimOption(func(o *ClaimOptions) error {
		if t.IsZero() {
			return badOption("ClaimAt", t, "must not be the zero time")
		}
		o.Now = &t
		return nil
	})
}

// LeaseFor overrides the queue's lease duration for this claim; d must be
// at least a millisecond.
func LeaseFor(d time.Duration) ClaimOption {
	return claimOption(func(o *ClaimOptions) error {
		if d < time.Millisecond {
			return badOption("LeaseFor", d, "must be at least 1ms")
		}
		o.Lease = d
		return nil
	})
}
