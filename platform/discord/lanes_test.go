package discord

import (
	"context"
	"fmt"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// holdingHandler holds every message of channel until release is closed,
// as a slow accept path would; the others pass.
type holdingHandler struct {
	*platformtest.Handler
	channel string
	release chan struct{}
}

func (h holdingHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	h.Msgs <- m
	if m.Target.Channel == h.channel && m.Target.Thread == "" {
		select {
		case <-h.release:
		case <-ctx.Done():
			return platform.Result{}, ctx.Err()
		}
	}
	return platform.Result{Status: platform.Queued}, nil
}

// TestSlowChannelHoldsUpOnlyItself: while the engine holds a message of
// channel C1, messages in a DM and in a thread reach it; C1's next
// messages wait behind the held one and keep their order.
func TestSlowChannelHoldsUpOnlyItself(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	f.AddChannel(thread)
	a := newTestAdapter(t, f, nil)
	h := holdingHandler{Handler: platformtest.NewHandler(), channel: "C1", release: make(chan struct{})}
	runConnected(t, f, a, h)

	f.Post(t, fakediscord.MessageEvent("1", "C1", "G1", "7", "c1", nil))
	if m := h.Message(t); m.Text != "c1" {
		t.Fatalf("first message = %q", m.Text)
	}
	for i := range 3 {
		f.Post(t, fakediscord.MessageEvent(fmt.Sprint(10+i), "C1", "G1", "7", fmt.Sprintf("c1 later %d", i), nil))
	}
	for i := range 3 {
		f.Post(t, fakediscord.MessageEvent(fmt.Sprint(20+i), "D1", "", "8", "dm", nil))
		f.Post(t, fakediscord.MessageEvent(fmt.Sprint(30+i), "T1", "G1", "9", "in the thread", nil))
	}
	for range 6 {
		if m := h.Message(t); m.Target.Channel == "C1" && m.Target.Thread == "" {
			t.Fatalf("%q reached the handler while C1's first message was held", m.Text)
		}
	}
	close(h.release)
	for i := range 3 {
		if m := h.Message(t); m.Text != fmt.Sprintf("c1 later %d", i) {
			t.Fatalf("after the release the handler got %q, want C1's messages in order", m.Text)
		}
	}
}
