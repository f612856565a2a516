package kvlease

import "time"

// Clock is a host's time. Leases compare only readings of one host's own
// clock (Go's monotonic reading when it is the real one).
type Clock interface {
	Now() time.Time
	// After is time.After.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
