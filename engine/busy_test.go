package engine

import (
	"context"
	"sync"
	"testing"
	"time"
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
	h.e.testHookQueued = func() {
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
	h.e.busy.mu.Lock()
	h.e.busy.onAdd = func(delta, n int) {
		mu.Lock()
		defer mu.Unlock()
		low = min(low, n)
		if delta < 0 {
			if done++; done == 2 {
				close(release) // both turns ran and were uncounted
			}
		}
	}
	h.e.busy.mu.Unlock()

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
	if n := h.e.busy.count(); n != 0 {
		t.Errorf("busy count %d after WaitIdle, want 0", n)
	}
}

func TestBusyCount(t *testing.T) {
	b := newBusyCount()
	if err := b.wait(context.Background()); err != nil {
		t.Fatalf("wait on a zero count: %v", err)
	}
	b.add(2)
	done := make(chan error, 1)
	go func() { done <- b.wait(context.Background()) }()
	b.add(-1)
	select {
	case err := <-done:
		t.Fatalf("wait returned (%v) with one item still counted", err)
	default:
	}
	b.add(-1)
	if err := <-done; err != nil {
		t.Fatalf("wait: %v", err)
	}

	// A decrement that overtakes its increment heals once the increment
	// lands, rather than clamping and sticking at one.
	b.add(-1)
	b.add(1)
	if n := b.count(); n != 0 {
		t.Fatalf("count %d after -1 then +1, want 0", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.add(1)
	cancel()
	if err := b.wait(ctx); err != context.Canceled {
		t.Fatalf("wait with a cancelled ctx = %v, want context.Canceled", err)
	}
}
