package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/cluster/embedded"
	"github.com/cc-connect/cc-connect/config"
)

func TestClusterStatusWithoutClusterTable(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, t.TempDir(), "[state]\ndir = \"state\"\n"+localChatTOML)
	code, stdout, stderr := runCLI(t, "--config", path, "cluster", "status")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "has no [cluster] table") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "state", "cluster")); !os.IsNotExist(err) {
		t.Errorf("a config without [cluster] left cluster state behind: %v", err)
	}
}

// TestClusterStatusReadsTheBucket: from a host that runs nothing, status
// shows the host that does.
func TestClusterStatusReadsTheBucket(t *testing.T) {
	t.Parallel()
	srv, err := embedded.Start(embedded.Options{Name: "n1", StoreDir: filepath.Join(t.TempDir(), "nats"), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	dir := t.TempDir()
	text := `[state]
dir = "state-%s"
[cluster]
host = "%s"
members = ["a", "b"]
urls = ["` + srv.ClientURL() + `"]
[[platforms]]
name = "slack"
type = "slack"
bot_token = "xoxb-1"
app_token = "xapp-1"
[[bindings]]
platform = "slack"
channel = "C1"
workspace = "ws"
allow_users = ["*"]
host = "a"
standby = ["b"]
`
	pathA := writeConfig(t, filepath.Join(dir, "a"), strings.ReplaceAll(text, "%s", "a"))
	pathB := writeConfig(t, filepath.Join(dir, "b"), strings.ReplaceAll(text, "%s", "b"))
	cfgA, err := config.Load(pathA)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := clusterSettings(cfgA)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := cluster.Start(ctx, s, cluster.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Close)

	// The heartbeat is written as the node starts; status may run first.
	var stdout, stderr string
	var code int
	for deadline := time.Now().Add(30 * time.Second); ; {
		code, stdout, stderr = runCLI(t, "--config", pathB, "cluster", "status")
		if code != exitOK || strings.Contains(stdout, "up, heartbeat") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling the bucket, which the CLI reads once per run
	}
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Cluster read by b", "up, heartbeat", "never seen", "slack/C1", "owner a", "standby b", "never held"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = runCLI(t, "--config", pathB, "cluster", "status", "--json")
	var r cluster.Report
	if code != exitOK || json.Unmarshal([]byte(stdout), &r) != nil || len(r.Hosts) != 2 || r.Bindings[0].Owner != "a" {
		t.Fatalf("--json: exit %d, %q, %s", code, stdout, stderr)
	}
}

func TestClusterNKey(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "seed")
	code, pub, stderr := runCLI(t, "cluster", "nkey", file)
	pub = strings.TrimSpace(pub)
	if code != exitOK || !strings.HasPrefix(pub, "U") || len(pub) != 56 {
		t.Fatalf("exit %d, public key %q, stderr %q", code, pub, stderr)
	}
	info, err := os.Stat(file)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("seed file: %v, mode %v", err, info.Mode().Perm())
	}
	data, _ := os.ReadFile(file)
	seed := strings.TrimSpace(string(data))
	if !strings.HasPrefix(seed, "SU") || strings.Contains(stderr+pub, seed) {
		t.Errorf("seed file %q; printed: %q %q", seed[:2], pub, stderr)
	}
	if code, _, stderr := runCLI(t, "cluster", "nkey", file); code != exitFailure || !strings.Contains(stderr, "already exists") {
		t.Errorf("overwriting a seed: exit %d, %q", code, stderr)
	}
	code, again, _ := runCLI(t, "cluster", "nkey", "--public", file)
	if code != exitOK || strings.TrimSpace(again) != pub {
		t.Errorf("--public: exit %d, %q, want %q", code, again, pub)
	}
	if code, _, _ := runCLI(t, "cluster"); code != exitUsage {
		t.Errorf("cluster without a command: exit %d", code)
	}
}
