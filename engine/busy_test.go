package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
)

// TestBusyCountedBeforeTheLoopCanFinishIt is the hang WaitIdle had under
// load: an item was counted only after the session's lock was released, so
// the session's loop could run and uncount it first; the count clamped at
// zero, and the late increment left it at one for good.
//
// The second message arrives while the first turn runs, so the loop takes
// it from the FIFO as soon as that turn ends, without waiting to be woken.
// Its enqueuer is held right after the lock (where the old code counted)
// until the loop has finished both turns: the ordering a busy machine
// produced now and then, forced.
func TestBusyCountedBeforeTheLoopCanFinishIt(t *testing.T) {
	h := newHarness(t, nil)
	held, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex // guards low, done and armed
	low, done, armed := 0, 0, false
	queued := func() {
		mu.Lock()
		hold := armed
		armed = false
		mu.Unlock()
		if !hold {
			return
		}
		close(held)
		select {
		case <-release:
		case <-time.After(waitLimit):
		}
	}
	h.e.convs.SetTestHooks(conv.TestHooks{Queued: queued, BusyChanged: func(delta, n int) {
		mu.Lock()
		defer mu.Unlock()
		low = min(low, n)
		if delta < 0 {
			if done++; done == 2 {
				close(release) // both turns ran and were uncounted
			}
		}
	}})

	h.say("alice", "T1", "one [[WAIT]]")
	h.fa.waitFor(t, "the first turn to run", func(fa *fakeAgents) bool { return fa.waiting == 1 })
	mu.Lock()
	armed = true
	mu.Unlock()
	said := make(chan error, 1)
	go func() {
		_, err := h.e.HandleMessage(context.Background(), h.message("alice", "T1", "two"))
		said <- err
	}()
	<-held
	h.fa.release(t)
	h.rec.waitSend(t, "echo: two")
	if err := <-said; err != nil {
		t.Fatalf("HandleMessage: %v", err)
	}
	h.waitIdle()
	mu.Lock()
	defer mu.Unlock()
	if low < 0 {
		t.Errorf("the busy count fell to %d: a turn was uncounted before it was counted", low)
	}
	if n := h.e.convs.Outstanding(); n != 0 {
		t.Errorf("busy count %d after WaitIdle, want 0", n)
	}
}
