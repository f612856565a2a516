package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestClusterReceiversOnTheEmbeddedServer: two binaries as one bot on the
// embedded server the way docs/cluster.md deploys it. c runs the server
// (which admits each member's NKey with that member's rights and makes the
// stream and the bucket itself) and is the only receiver; a owns the
// binding, opens no Socket Mode connection, and answers through the Web
// API what c published. Neither host is refused anything by NATS.
func TestClusterReceiversOnTheEmbeddedServer(t *testing.T) {
	t.Parallel()
	f := fakeslack.New(t)
	dir := t.TempDir()
	keys := map[string]string{}
	seeds := map[string]string{}
	for _, h := range []string{"a", "c"} {
		seeds[h] = filepath.Join(dir, h+".seed")
		pub, err := cluster.NewSeedFile(seeds[h])
		if err != nil {
			t.Fatal(err)
		}
		keys[h] = pub
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String() // released for the server; another process could take it, which fails the test loudly
	ln.Close()

	start := func(host, clusterExtra string) (*process, string) {
		hdir := filepath.Join(dir, host)
		record := filepath.Join(hdir, "record.jsonl")
		path := writeConfig(t, hdir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q, FAKECLAUDE_RECORD = %q }
[cluster]
host = %q
members = ["a", "c"]
receivers = ["c"]
nkey_seed_file = %q
lease_ttl = "3s"
%s
[[platforms]]
name = "chat"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = ["U1"]
host = "a"
progress = "quiet"
sender_header = false
`, fakeclaude.Build(t), filepath.Join(hdir, "claude-config"), record, host, seeds[host], clusterExtra, f.APIURL()))
		p := startBinaryEnv(t, []string{"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken}, "run", "--config", path)
		return p, record
	}
	c, _ := start("c", fmt.Sprintf("embedded = true\nembedded_listen = %q\nembedded_nkeys = { a = %q, c = %q }", addr, keys["a"], keys["c"]))
	c.waitErr(t, "Joined the cluster")
	a, record := start("a", fmt.Sprintf("urls = [\"nats://%s\"]", addr))
	a.waitErr(t, "Serving the binding")
	a.waitErr(t, "no Socket Mode connection")
	f.WaitConn(t, 1)

	const ts = "1700000001.000100"
	f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> through the receiver", nil))
	f.WaitPost(t, "the owner's reply", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "echo: through the receiver")
	})
	if got := fakeclaude.Texts(fakeclaude.ReadRecord(t, record)); len(got) != 1 {
		t.Errorf("the owner's claude was sent %q, want the one message", got)
	}
	if n := f.Conns(); n != 1 {
		t.Errorf("%d Socket Mode connections, want the receiver's alone", n)
	}
	for name, p := range map[string]*process{"a": a, "c": c} {
		for _, ln := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(ln, "NATS refused") || strings.Contains(ln, "Violation") {
				t.Errorf("host %s: %s", name, ln)
			}
		}
	}
	if !strings.Contains(c.stderr.String(), `users="[a c]"`) && !strings.Contains(c.stderr.String(), `"users":["a","c"]`) {
		t.Errorf("the embedded server did not say which members it admits:\n%s", c.stderr.String())
	}
}
