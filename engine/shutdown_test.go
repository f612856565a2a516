package engine

import (
	"context"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/engine/render"
)

func TestShutdownInterruptsAfterGraceAndClosesAll(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.ShutdownGrace = 20 * time.Millisecond })
	h.say("alice", "T1", "idle one")
	h.rec.waitSend(t, "echo: idle one")
	h.say("bob", "T2", "forever [[HANG]]")
	h.fa.waitFor(t, "the hanging turn", func(fa *fakeAgents) bool { return fa.waiting == 1 })
	h.say("bob", "T2", "queued behind")
	h.rec.waitSend(t, "Queued (position 1)")

	h.stop()
	h.fa.mu.Lock()
	live := h.fa.live
	h.fa.mu.Unlock()
	if live != 0 {
		t.Errorf("%d agent processes outlived Run", live)
	}
	h.rec.waitSend(t, "Stopped: cc-connect is shutting down")
	if got := h.rec.sends(render.RestartQueuedText + "queued behind"); len(got) != 1 {
		t.Errorf("queued message notices = %q, want one saying it stays queued", got)
	}
	if got := h.rec.sends("echo: queued behind"); len(got) != 0 {
		t.Errorf("a queued message ran during shutdown: %q", got)
	}
	// After Run, new messages are refused plainly.
	h.say("alice", "T1", "too late")
	if got := h.rec.sends(render.ShutdownText); len(got) == 0 {
		t.Error("no shutdown reply to a message after Run returned")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.e.WaitIdle(ctx); err != nil {
		t.Errorf("WaitIdle after shutdown: %v", err)
	}
}

func TestShutdownLetsRunningTurnFinishWithinGrace(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.ShutdownGrace = 10 * time.Second })
	h.say("alice", "T1", "almost done [[WAIT]]")
	h.fa.waitFor(t, "the turn", func(fa *fakeAgents) bool { return fa.waiting == 1 })
	h.cancel()
	h.fa.release(t)
	h.stop()
	if got := h.rec.sends("echo: almost done"); len(got) != 1 {
		t.Errorf("reply = %q, want the turn to finish within the grace", got)
	}
	if got := h.rec.sends("Stopped"); len(got) != 0 {
		t.Errorf("the turn was interrupted within the grace")
	}
	h.fa.mu.Lock()
	defer h.fa.mu.Unlock()
	if h.fa.live != 0 {
		t.Errorf("%d processes outlived Run", h.fa.live)
	}
}

func TestWaitIdle(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "a [[WAIT]]")
	h.say("alice", "T1", "b")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := h.e.WaitIdle(ctx); err == nil {
		t.Fatal("WaitIdle returned while a turn was running")
	}
	h.fa.release(t)
	h.waitIdle()
	if got := h.rec.sends("echo: b"); len(got) != 1 {
		t.Errorf("WaitIdle returned before the queued message ran")
	}
}
