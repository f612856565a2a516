package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/testenv"
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
	// Once; or once per tenure of a, if a starved renewal let a's lease
	// lapse mid-turn (a's turn then stops unanswered, and a, the only
	// host that serves the binding, takes the lease back and runs it
	// again): answered once either way.
	got := fakeclaude.Texts(fakeclaude.ReadRecord(t, record))
	if len(got) == 0 || len(got) > len(tenureStart.FindAllString(a.stderr.String(), -1)) {
		t.Errorf("the owner's claude was sent %q, want the one message (once per tenure of the binding)", got)
	}
	if n := len(postsIn(f, ts, "echo: through the receiver")); n != 1 {
		t.Errorf("%d answers, want 1", n)
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

// TestClusterDocsShowThePermissions: the NATS config docs/cluster.md shows
// for its three-host example is what `cluster permissions` prints for that
// example's config.
func TestClusterDocsShowThePermissions(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "cluster.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	section := doc[strings.Index(doc, "### Three NATS nodes, N hosts"):]
	example := regexp.MustCompile("(?s)```toml\n(.*?)```").FindStringSubmatch(section)
	shown := regexp.MustCompile("(?s)For the config above it prints.*?```\n(.*?)```").FindStringSubmatch(section)
	if example == nil || shown == nil {
		t.Fatal("docs/cluster.md lacks the example config or the permissions it prints")
	}
	dir := t.TempDir()
	for _, f := range []string{"nats.seed", "ca.pem"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	text := strings.NewReplacer(`"${HOSTNAME}"`, `"build-3"`, "/etc/cc-connect/", dir+"/").Replace(example[1]) +
		"[[platforms]]\nname = \"slack\"\ntype = \"slack\"\nbot_token = \"xoxb-1\"\napp_token = \"xapp-1\"\n"
	path := writeConfig(t, dir, text)
	code, out, stderr := runCLI(t, "cluster", "permissions", "--config", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if out != shown[1] {
		t.Errorf("docs/cluster.md shows another block than `cluster permissions` prints for its example; it prints:\n%s", out)
	}
}

// TestClusterPermissionsAndInitCommands: `cluster permissions` fills in
// the keys it is given and refuses a stranger; `cluster init` makes the
// stream and the bucket with the admin's seed, on a server that holds
// users to the printed rights, and fails with a host's.
func TestClusterPermissionsAndInitCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys, seeds := map[string]string{}, map[string]string{}
	for _, h := range []string{"a", "admin"} {
		seeds[h] = filepath.Join(dir, h+".seed")
		pub, err := cluster.NewSeedFile(seeds[h])
		if err != nil {
			t.Fatal(err)
		}
		keys[h] = pub
	}
	config := func(url string) string {
		return writeConfig(t, filepath.Join(dir, "cfg-"+fmt.Sprint(len(url))), fmt.Sprintf(`
[cluster]
host = "a"
members = ["a"]
urls = [%q]
nkey_seed_file = %q
[[platforms]]
name = "chat"
type = "slack"
bot_token = "xoxb-1"
app_token = "xapp-1"
[[bindings]]
platform = "chat"
workspace = "ws"
allow_users = ["*"]
host = "a"
`, url, seeds["a"]))
	}
	path := config("nats://127.0.0.1:4222")
	code, out, stderr := runCLI(t, "cluster", "permissions", "--config", path, "--nkey", "a="+keys["a"], "--admin-nkey", keys["admin"])
	if code != exitOK || !strings.Contains(out, `{ nkey: "`+keys["a"]+`", permissions: $CC_CONNECT_A }`) ||
		!strings.Contains(out, `{ nkey: "`+keys["admin"]+`", permissions: $CC_CONNECT_ADMIN }`) {
		t.Fatalf("exit %d, %s\n%s", code, stderr, out)
	}
	if code, _, stderr := runCLI(t, "cluster", "permissions", "--config", path, "--nkey", "z="+keys["a"]); code != exitUsage ||
		!strings.Contains(stderr, `"z" is not in cluster.members`) {
		t.Errorf("a key for a stranger: exit %d, %s", code, stderr)
	}

	// A server run from what it printed.
	conf := filepath.Join(dir, "nats.conf")
	text := "listen: 127.0.0.1:-1\njetstream { store_dir: \"" + filepath.Join(dir, "js") + "\" }\n" + out
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("the printed config does not parse: %v", err)
	}
	opts.NoSigs = true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	path = config(ns.ClientURL())
	if code, _, stderr := runCLI(t, "cluster", "init", "--config", path); code != exitUsage || !strings.Contains(stderr, "--nkey-seed-file") {
		t.Errorf("init without a credential: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "cluster", "init", "--config", path, "--nkey-seed-file", seeds["a"]); code != exitFailure ||
		!strings.Contains(stderr, "refused") {
		t.Errorf("init with a host's seed: exit %d, %s", code, stderr)
	}
	code, out, stderr = runCLI(t, "cluster", "init", "--config", path, "--nkey-seed-file", seeds["admin"])
	if code != exitOK || !strings.Contains(out, "cc-connect-in") {
		t.Fatalf("init with the admin's seed: exit %d, %s %s", code, out, stderr)
	}
	// Now a host finds them: its status reads the bucket.
	if code, _, stderr := runCLI(t, "cluster", "status", "--config", path); code != exitOK {
		t.Errorf("status after init: exit %d, %s", code, stderr)
	}
}
