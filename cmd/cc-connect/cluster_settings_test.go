package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/config"
)

func TestClusterSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	text := `
[cluster]
host = "b"
members = ["a", "b"]
urls = ["nats://n1:4222"]
lease_ttl = "9s"
prefix = "team"
[[platforms]]
name = "tty"
type = "local"
[[platforms]]
name = "slack"
type = "slack"
bot_token = "xoxb-1"
app_token = "xapp-1"
[[bindings]]
platform = "tty"
workspace = "ws"
allow_users = ["*"]
[[bindings]]
platform = "slack"
channel = "C1"
workspace = "ws"
allow_users = ["*"]
host = "a"
standby = ["b"]
[[bindings]]
platform = "slack"
workspace = "/elsewhere"
allow_users = ["*"]
host = "a"
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := clusterSettings(cfg)
	if !ok || s.Host != "b" || s.LeaseTTL != 9*time.Second || s.Names.Prefix != "team" || s.Embedded != nil {
		t.Fatalf("settings %+v", s)
	}
	if len(s.Bindings) != 2 {
		t.Fatalf("bindings %+v: want the two Slack ones, not the terminal's", s.Bindings)
	}
	exact, wild := names.Binding{Platform: "slack", Channel: "C1"}, names.Binding{Platform: "slack", Channel: "*"}
	for _, tt := range []struct {
		platform, channel string
		want              names.Binding
		ok                bool
	}{
		{"slack", "C1", exact, true}, {"slack", "C2", wild, true}, {"tty", "local", names.Binding{}, false}, {"discord", "C1", names.Binding{}, false},
	} {
		got, ok := s.Route(tt.platform, tt.channel)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Route(%s, %s) = %v, %v; want %v, %v", tt.platform, tt.channel, got, ok, tt.want, tt.ok)
		}
	}
	spec, _ := s.Spec(exact)
	if role, rank, ok := spec.Role("b"); !ok || role != kvlease.Standby || rank != 0 {
		t.Errorf("b's role for %v: %v %d %v", exact, role, rank, ok)
	}
	spec, _ = s.Spec(wild)
	if _, _, ok := spec.Role("b"); ok {
		t.Errorf("b serves %v, which names it nowhere", wild)
	}
	// Hosts that route differently fingerprint differently.
	other := s
	other.Bindings = slices.Clone(s.Bindings)
	other.Bindings[0].Standby = nil
	if other.Fingerprint() == s.ConfigHash {
		t.Error("a changed standby list does not change the fingerprint")
	}
	noCluster := *cfg
	noCluster.Cluster = nil
	if _, ok := clusterSettings(&noCluster); ok {
		t.Error("settings from a config without [cluster]")
	}
}
