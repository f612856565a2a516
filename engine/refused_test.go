package engine

import (
	"fmt"
	"testing"

	"github.com/cc-connect/cc-connect/engine/conv"
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
		if i%(maxNotices/2) == 0 {
			// The refusals are posted by the notifier, which drops what
			// a flood puts past its bound (and then forgets the thread:
			// TestDroppedRefusalIsToldNextTime): let it drain, so that
			// every thread is told and remembered.
			h.waitIdle()
		}
	}
	h.waitIdle()
	if d := h.logs.Records("Notice dropped"); len(d) != 0 {
		t.Fatalf("%d refusals dropped: the flood outran the notifier", len(d))
	}
	if n := h.e.refused.Len(); n != refusedMemory {
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

// TestDroppedRefusalIsToldNextTime: a refusal the notifier drops (too many
// in flight) leaves the thread untold, so its next message is refused
// aloud; until then the memory does not count it as told.
func TestDroppedRefusalIsToldNextTime(t *testing.T) {
	h := newHarness(t, nil)
	n := h.e.notices
	n.mu.Lock()
	n.inflight = maxNotices // the notifier is full
	n.mu.Unlock()
	h.say("mallory", "T1", "hi")
	if h.e.refused.Has(conv.Key(h.message("mallory", "T1", "").Target)) {
		t.Error("a thread whose refusal was dropped is remembered as told")
	}
	n.mu.Lock()
	n.inflight = 0
	n.mu.Unlock()
	h.say("mallory", "T1", "hi again")
	h.rec.waitSend(t, refusalText)
	h.waitIdle()
	told := 0
	for _, c := range h.rec.kinds("send") {
		if c.Text == refusalText {
			told++
		}
	}
	if told != 1 {
		t.Errorf("%d refusals posted, want the one after the dropped one", told)
	}
	if len(h.logs.Records("Notice dropped")) != 1 {
		t.Errorf("the first refusal was not dropped: the test did not test the drop")
	}
}
