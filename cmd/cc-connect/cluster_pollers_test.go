package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/cluster/embedded"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
)

// recorder is a handler that notes which host got which message.
type recorder struct {
	host    string
	mu      *sync.Mutex
	got     map[string][]string // message text -> hosts
	arrived chan<- struct{}     // told of each message, without blocking
}

func (r recorder) HandleMessage(_ context.Context, m platform.Message) (platform.Result, error) {
	r.mu.Lock()
	r.got[m.Text] = append(r.got[m.Text], r.host)
	r.mu.Unlock()
	select {
	case r.arrived <- struct{}{}:
	default:
	}
	return platform.Result{Status: platform.Queued}, nil
}

func (recorder) HandleAction(context.Context, platform.Action) error { return nil }

// TestGateReceivers: with the gates of clusterPlatforms given, two hosts running the same
// Telegram, Discord and Slack adapters have one Telegram poller and one
// Discord gateway between them (each message reaches one host), under
// the lease keys the status shows; Slack is left ungated. The hosts'
// leases are on a test clock that stands still: a lease is neither
// renewed nor expires, so a holder starved of CPU on a busy machine cannot
// lose it to the other host mid-test (which, legitimately, could deliver
// a message to both).
func TestGateReceivers(t *testing.T) {
	t.Parallel()
	srv, err := embedded.Start(embedded.Options{Name: "n1", StoreDir: filepath.Join(t.TempDir(), "nats"), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	tg, dc := faketelegram.New(t), fakediscord.New(t)
	platforms := []config.Platform{
		{Name: "tg", Type: config.TypeTelegram, APIURL: tg.URL(), Token: faketelegram.Token},
		{Name: "dc", Type: config.TypeDiscord, APIURL: dc.URL(), Token: fakediscord.Token},
		{Name: "sl", Type: config.TypeSlack, BotToken: "xoxb-1", AppToken: "xapp-1"},
	}

	var mu sync.Mutex
	got := map[string][]string{}
	arrived := make(chan struct{}, 1)
	clock := clustertest.NewClock()
	var nodes []*cluster.Node
	for _, host := range []string{"a", "b"} {
		s := cluster.Settings{Host: host, Members: []string{"a", "b"}, URLs: []string{srv.ClientURL()},
			StateDir: filepath.Join(t.TempDir(), "state"), LeaseTTL: 2 * time.Second, Replicas: 1, Names: names.Names{Prefix: "t"}}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		node, err := cluster.Start(ctx, s, cluster.Options{Version: "test", Clock: clock})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(node.Close)
		nodes = append(nodes, node)
		var ads []platform.Adapter
		for _, p := range platforms {
			ad, err := adapterFactories[p.Type](p, adapterDeps{Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			ads = append(ads, ad)
		}
		for i, p := range platforms {
			gate, ok := clusterPlatforms[p.Type]
			if !ok {
				continue // Slack: every host connects
			}
			if ads[i], err = gate(context.Background(), node, ads[i], p, slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := gateTelegram(context.Background(), node, ads[1], platforms[1], slog.New(slog.DiscardHandler)); err == nil {
			t.Error("a Discord adapter was taken for a Telegram one")
		}
		for _, ad := range ads[:2] {
			runCtx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = ad.Run(runCtx, recorder{host: host, mu: &mu, got: got, arrived: arrived})
			}()
			t.Cleanup(func() { stop(); <-done })
		}
	}

	dc.WaitConnected(t, 1)
	for i := range 5 {
		tg.Send(map[string]any{"chat": map[string]any{"id": 42, "type": "private"}, "from": faketelegram.User(7, "alice", false), "text": fmt.Sprintf("tg%d", i)})
		dc.Post(t, fakediscord.MessageEvent(fmt.Sprint(100+i), "D1", "", "7", fmt.Sprintf("dc%d", i), nil))
	}
	deadline := time.After(30 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 10 {
			break
		}
		select {
		case <-arrived:
		case <-deadline:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%d of 10 messages arrived: %v", n, got)
		}
	}
	mu.Lock()
	for text, hosts := range got {
		if len(hosts) != 1 {
			t.Errorf("%s reached %v, want one host", text, hosts)
		}
	}
	mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := nodes[0].Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{}
	for _, l := range r.Leases {
		held[l.Key] = l.Holder
	}
	if held["poller.tg"] == "" || held["shard.dc.0"] == "" {
		t.Errorf("the status shows the leases %v, want poller.tg and shard.dc.0 held", held)
	}
	if dc.Overlaps() != 0 {
		t.Errorf("two Discord sessions were open at once")
	}
}
