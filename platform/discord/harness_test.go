package discord

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

func newTestAdapter(t *testing.T, f *fakediscord.Server, mod func(*Config)) *Adapter {
	t.Helper()
	cfg := Config{Name: "dc-test", Token: fakediscord.Token, APIURL: f.URL()}
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a.wire.backoffMin = time.Millisecond
	a.wire.backoffMax = 5 * time.Millisecond
	a.wire.requestTimeout = 10 * time.Second
	return a
}

// runConnected runs a until the test ends (checking Run returns nil) and
// waits for the first handshake.
func runConnected(t *testing.T, f *fakediscord.Server, a *Adapter, h platform.Handler) {
	t.Helper()
	platformtest.Run(t, 15*time.Second, func(ctx context.Context) error { return a.Run(ctx, h) })
	f.WaitConnected(t, 1)
	// The fake has sent READY; the adapter learns its own id from it on
	// the gateway reader, which nothing signals: look until it has.
	deadline := time.Now().Add(10 * time.Second)
	for a.gateway.self.get() == "" {
		if time.Now().After(deadline) {
			t.Fatal("the adapter did not learn its own id from READY")
		}
		time.Sleep(time.Millisecond)
	}
}

// guildChannel is a text channel of guild G1.
var guildChannel = fakediscord.Channel{ID: "C1", Type: 0, GuildID: "G1"}

// thread is a thread T1 in C1.
var thread = fakediscord.Channel{ID: "T1", Type: 11, GuildID: "G1", ParentID: "C1"}
