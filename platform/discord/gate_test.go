package discord

import (
	"context"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// TestGatedGatewayFollowsTheTenure: with a gate the adapter posts through
// REST at any time (knowing its own id without the gateway), but opens
// the gateway only within a tenure; when the tenure ends it closes the
// connection, and the next tenure opens a new session (IDENTIFY).
func TestGatedGatewayFollowsTheTenure(t *testing.T) {
	t.Parallel()
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	g := platformtest.NewGate()
	a.SetGate(g)
	h := platformtest.NewHandler()
	platformtest.Run(t, 15*time.Second, func(ctx context.Context) error { return a.Run(ctx, h) })
	ctx := context.Background()

	g.WaitAcquiring(t)
	if _, err := a.Send(ctx, platform.Target{Platform: "dc-test", Channel: "C1"}, "before"); err != nil {
		t.Fatal(err)
	}
	if f.Connects() != 0 || f.Open() {
		t.Fatal("the gateway was opened without a tenure")
	}
	if a.gateway.self.get() != fakediscord.BotID {
		t.Errorf("the bot's id is %q without the gateway, want %s", a.gateway.self.get(), fakediscord.BotID)
	}
	if s := a.Status(); s != (platform.ConnStatus{State: platform.Standby, Detail: "another host holds the gateway"}) {
		t.Errorf("status %q without a tenure", s)
	}

	t1 := g.Grant(t)
	f.WaitConnected(t, 1)
	f.Post(t, fakediscord.MessageEvent("11", "D1", "", "7", "first", nil))
	if m := h.Message(t); m.Text != "first" {
		t.Fatalf("got %q", m.Text)
	}
	t1.Lose()
	g.WaitAcquiring(t)
	f.Wait(t, "the gateway closed", func() bool { return !f.Open() })

	g.Grant(t)
	f.WaitConnected(t, 2)
	f.Post(t, fakediscord.MessageEvent("12", "D1", "", "7", "second", nil))
	if m := h.Message(t); m.Text != "second" {
		t.Fatalf("got %q", m.Text)
	}
	// The same host getting the shard back resumes its own session (the
	// library keeps its id and sequence), which replays what it missed;
	// another host could not, and identifies anew.
	for i, want := range []int{2, 6} {
		if fr := f.Frame(t); fr.Op != want {
			t.Errorf("handshake %d was op %d, want %d", i+1, fr.Op, want)
		}
	}
	if f.Overlaps() != 0 {
		t.Error("two sessions were open at once")
	}
}
