package console

import (
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/activity"
)

// TestSlowBrowserHoldsUpNothing: a browser that reads nothing fills its
// buffer; the conversation's events go on being recorded without waiting
// for it, the browser is marked as having lost events (the page tells it
// to load again), and another browser that keeps up gets every event.
func TestSlowBrowserHoldsUpNothing(t *testing.T) {
	h := newHub()
	// Not deferred: a recording that blocked would hold the hub's lock,
	// and cancelling would wait on it too.
	slow, cancelSlow := h.watch("slack/C1/T1")
	fast, cancelFast := h.watch("slack/C1/T1")
	failed := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range watchQueue + 10 {
			h.record(activity.Event{Kind: activity.Tool, Conversation: "slack/C1/T1", Tool: "Bash"})
			select { // the browser that keeps up reads each as it comes
			case <-fast.ch:
			default:
				failed <- "the browser that keeps up missed an event"
				return
			}
			if i == watchQueue-1 && h.overflowed(slow) {
				failed <- "the slow browser lost an event before its buffer was full"
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("recording waited on a browser that reads nothing")
	}
	select {
	case msg := <-failed:
		t.Fatal(msg)
	default:
	}
	if !h.overflowed(slow) {
		t.Error("the slow browser is not marked as having lost events")
	}
	if h.overflowed(fast) {
		t.Error("the browser that keeps up is marked as having lost events")
	}
	cancelSlow()
	cancelFast()
}
