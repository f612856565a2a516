package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/discord"
)

var dcAll = ingress.Binding{Platform: "dc", Channel: "*"}

// TestDiscordShardMovesBetweenHosts: three hosts, one gateway shard.
// Only its holder connects; when the holder stops (its Run cancelled: it
// releases the lease) and then when the next one is cut off from NATS (its
// lease expires), another host opens the gateway with a new IDENTIFY.
// Every message sent while a healthy holder was connected is published
// once, in order, and never were two hosts connected at once.
func TestDiscordShardMovesBetweenHosts(t *testing.T) {
	t.Parallel()
	f := fakediscord.New(t)
	url := natstest.Single(t).ClientURL()
	var mu sync.Mutex
	adapters := map[string]*discord.Adapter{}
	hosts := startHosts(t, url, []string{"a", "b", "c"}, func(ctx context.Context, h *host) error {
		ad, err := discord.New(discord.Config{Name: "dc", Token: fakediscord.Token, APIURL: f.URL()}, slog.New(slog.DiscardHandler))
		if err != nil {
			return err
		}
		ad.SetGate(h.node.ShardGate("dc", 0))
		mu.Lock()
		adapters[h.name] = ad
		mu.Unlock()
		return ad.Run(ctx, publishHandler{n: h.node, b: dcAll})
	})
	connected := func() []*host {
		mu.Lock()
		defer mu.Unlock()
		var out []*host
		for _, h := range hosts {
			if ad := adapters[h.name]; ad != nil && ad.Status().State == platform.Connected {
				out = append(out, h)
			}
		}
		return out
	}
	// holder waits for the n-th handshake, done by a host not in except.
	holder := func(n int, except ...*host) *host {
		f.WaitConnected(t, n)
		var found *host
		waitCond(t, "one host connected", func() bool {
			c := connected()
			if len(c) != 1 || slices.Contains(except, c[0]) {
				return false
			}
			found = c[0]
			return true
		})
		return found
	}
	var want []string
	post := func(from, to int) {
		for i := from; i < to; i++ {
			text := fmt.Sprintf("m%03d", i)
			f.Post(t, fakediscord.MessageEvent(fmt.Sprint(1000+i), "D1", "", "7", text, nil))
			want = append(want, text)
		}
	}

	first := holder(1)
	post(0, 10)
	waitStream(t, first.node, len(want))
	first.stop(t)
	second := holder(2, first)
	post(10, 20)
	waitStream(t, second.node, len(want))
	second.proxy.Cut() // its renewals fail: the lease expires, it closes the gateway
	// Time moves in two steps, as it would on the real clock: past the
	// cut-off holder's own deadline (it closes the gateway), then to when
	// the next host may take the lease, a fifth of a TTL later.
	key := names.ShardLease("dc", 0)
	held := second.leases.Acquired(t, key)
	next := others(hosts, first, second)[0]
	second.clock.Advance(second.node.Settings().LeaseTTL * 4 / 5)
	second.leases.Last(t, "the cut-off holder losing the lease", func(e kvlease.Event) bool {
		return e.Kind == kvlease.Lost && e.Key == key
	})
	waitCond(t, "the cut-off holder's gateway closed", func() bool { return len(connected()) == 0 })
	next.leases.ExpireFor(t, second.clock, held)
	third := holder(3, first, second)
	post(20, 30)
	waitStream(t, third.node, len(want))
	second.proxy.Heal()
	post(30, 35)
	waitStream(t, third.node, len(want))

	texts, perID := streamTexts(t, third.node)
	if !slices.Equal(texts, want) {
		t.Errorf("the stream holds\n%v\nwant\n%v", texts, want)
	}
	for id, n := range perID {
		if n != 1 {
			t.Errorf("message %s published %d times", id, n)
		}
	}
	if n := f.Overlaps(); n != 0 {
		t.Errorf("%d gateway connections were opened while another host's was open", n)
	}
	for i := range 3 {
		if fr, ok := f.PendingFrame(); !ok || fr.Op != 2 {
			t.Errorf("handshake %d: %+v, %v; want an IDENTIFY (a new host cannot RESUME another's session)", i+1, fr, ok)
		}
	}
	if c := connected(); len(c) != 1 || c[0] != third {
		t.Errorf("connected after the moves: %d hosts, want only %s", len(c), third.name)
	}
}
