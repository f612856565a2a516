package kvlease

import "time"

// Clock is a host's time. Leases compare only readings of one host's own
// clock (Go's monotonic reading when it is the real one).
type Clock interface {
	Now() time.Time
	// At fires once the clock reaches t (a time from Now). An absolute
	// time, not a duration: a duration would start counting wherever the
	// caller happens to be, a moment after it read the clock.
	At(t time.Time) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }
