package natstest

import (
	"testing"
	"time"
)

// TestClockFiresWhatIsDue: a timer fires once the clock reaches its time,
// not before; one for a time already passed fires at once; AdvanceTo
// never moves the clock back.
func TestClockFiresWhatIsDue(t *testing.T) {
	c := NewClock()
	t0 := c.Now()
	fired := func(ch <-chan time.Time) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	soon, later := c.At(t0.Add(time.Second)), c.At(t0.Add(time.Minute))
	if !fired(c.At(t0)) {
		t.Error("a timer for now did not fire at once")
	}
	c.Advance(999 * time.Millisecond)
	if fired(soon) {
		t.Error("fired a millisecond early")
	}
	c.Advance(time.Millisecond)
	if !fired(soon) || fired(later) {
		t.Error("at one second: want the first timer fired, not the second")
	}
	c.AdvanceTo(t0)
	if !c.Now().Equal(t0.Add(time.Second)) {
		t.Errorf("AdvanceTo moved the clock back to %v", c.Now())
	}
	c.AdvanceTo(t0.Add(time.Hour))
	if !fired(later) || !c.Now().Equal(t0.Add(time.Hour)) {
		t.Errorf("AdvanceTo an hour: now %v, the minute's timer fired: %v", c.Now(), fired(later))
	}
}
