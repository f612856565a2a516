package engine

import (
	"fmt"
	"testing"
)

// TestAccessRefusalMemoryIsBounded: a user who is not allowed, writing in
// ever new threads, used to grow the per-thread "already refused" memory
// without end. It holds the latest refusedMemory threads; one forgotten
// gets a single refusal more, one remembered none.
func TestAccessRefusalMemoryIsBounded(t *testing.T) {
	h := newHarness(t, nil)
	const extra = 10
	for i := range refusedMemory + extra {
		h.say("mallory", fmt.Sprintf("T%d", i), "hi")
	}
	// The refusals are posted by the notifier, which drops what a flood
	// puts past its bound (T0's, the first, is always posted): let it
	// drain before the threads write again.
	h.waitIdle()
	if n := h.e.refused.len(); n != refusedMemory {
		t.Errorf("refusal memory holds %d threads, want at most %d", n, refusedMemory)
	}
	count := func(thread string) int {
		n := 0
		for _, c := range h.rec.kinds("send") {
			if c.Text == refusalText && c.To.Thread == thread {
				n++
			}
		}
		return n
	}
	h.say("mallory", "T0", "hi again")                                      // forgotten
	h.say("mallory", fmt.Sprintf("T%d", refusedMemory+extra-1), "hi again") // remembered
	h.waitIdle()
	if n := count("T0"); n != 2 {
		t.Errorf("the oldest thread got %d refusals, want 2 once forgotten", n)
	}
	if n := count(fmt.Sprintf("T%d", refusedMemory+extra-1)); n != 1 {
		t.Errorf("a recent thread got %d refusals, want 1", n)
	}
}
