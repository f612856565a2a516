package discord

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// overlapHandler records each message and counts the calls that began
// while another was still running.
type overlapHandler struct {
	*platformtest.Handler
	running, overlaps atomic.Int32
}

func (h *overlapHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	if h.running.Add(1) > 1 {
		h.overlaps.Add(1)
	}
	defer h.running.Add(-1)
	return h.Handler.HandleMessage(ctx, m)
}

// TestMessagesReachTheHandlerInOrder: messages in a channel, a DM and a
// thread, interleaved, reach the handler one at a time and in the order
// Discord sent them, each routed to its conversation.
func TestMessagesReachTheHandlerInOrder(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	f.AddChannel(thread)
	a := newTestAdapter(t, f, nil)
	h := &overlapHandler{Handler: platformtest.NewHandler()}
	runConnected(t, f, a, h)

	type sent struct{ text, channel, thread string }
	var want []sent
	for i := range 10 {
		f.Post(t, fakediscord.MessageEvent(fmt.Sprint(100+3*i), "C1", "G1", "7", fmt.Sprintf("c%d", i), nil))
		f.Post(t, fakediscord.MessageEvent(fmt.Sprint(101+3*i), "D1", "", "8", fmt.Sprintf("d%d", i), nil))
		f.Post(t, fakediscord.MessageEvent(fmt.Sprint(102+3*i), "T1", "G1", "9", fmt.Sprintf("t%d", i), nil))
		want = append(want, sent{fmt.Sprintf("c%d", i), "C1", ""}, sent{fmt.Sprintf("d%d", i), "D1", ""}, sent{fmt.Sprintf("t%d", i), "C1", "T1"})
	}
	for i, w := range want {
		m := h.Message(t)
		if got := (sent{m.Text, m.Target.Channel, m.Target.Thread}); got != w {
			t.Fatalf("message %d reached the handler as %+v, want %+v (the order Discord sent them)", i, got, w)
		}
	}
	if o := h.overlaps.Load(); o != 0 {
		t.Errorf("%d handler calls began while another ran", o)
	}
}

// heldHandler holds each message until release is closed, whatever its
// context says, as an engine in the middle of a journal write would.
type heldHandler struct {
	*platformtest.Handler
	release chan struct{}
}

func (h heldHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	h.Msgs <- m
	<-h.release
	return platform.Result{Status: platform.Queued}, nil
}

// TestRunWaitsForTheHandler: the gateway's reader calls the handler, and
// may be in a call when Run is stopped; Run returns only once that call
// has, so that the engine is never called after its adapter stopped.
func TestRunWaitsForTheHandler(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	h := heldHandler{Handler: platformtest.NewHandler(), release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, h) }()
	f.WaitConnected(t, 1)
	f.Post(t, fakediscord.MessageEvent("100", "D1", "", "8", "held", nil))
	h.Message(t)
	cancel()
	// Run's own stop (closing the gateway) takes about a second; one that
	// did not wait for the handler would be back within this.
	select {
	case <-done:
		t.Fatal("Run returned while the handler was still in a call")
	case <-time.After(3 * time.Second):
	}
	close(h.release)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return once the handler had")
	}
}
