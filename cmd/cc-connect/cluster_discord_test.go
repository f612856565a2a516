package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakediscord"
)

// TestClusterDiscordOwnerKilled: two cc-connect binaries on one bot
// token, one NATS server, the fake Discord. Host a holds the gateway and
// owns the binding of a plain channel (no thread per message: the
// channel is one conversation); kill -9 of a moves both to its standby b.
// A mention after the move is answered by b, in the channel, after b said
// once which host the conversation moved to.
func TestClusterDiscordOwnerKilled(t *testing.T) {
	t.Parallel()
	srv := clustertest.Single(t)
	f := fakediscord.New(t)
	f.AddChannel(fakediscord.Channel{ID: "C1", Type: 0, GuildID: "G1", Name: "dev"})
	start := func(name string) *process {
		dir := t.TempDir()
		cfg := writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q }
[cluster]
host = %q
members = ["a", "b"]
urls = [%q]
lease_ttl = "3s"
[[platforms]]
name = "chat"
type = "discord"
token = "${DISCORD_BOT_TOKEN}"
api_url = %q
[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = ["7"]
host = "a"
standby = ["b"]
progress = "quiet"
sender_header = false
`, fakeclaude.Build(t), filepath.Join(dir, "cc"), name, srv.ClientURL(), f.URL()))
		tmp := filepath.Join(dir, "tmp")
		if err := os.Mkdir(tmp, 0o700); err != nil {
			t.Fatal(err)
		}
		return startBinaryEnv(t, []string{"TMPDIR=" + tmp, "DISCORD_BOT_TOKEN=" + fakediscord.Token}, "run", "--config", cfg)
	}
	a := start("a")
	a.waitErr(t, "Discord bot connected") // a holds the gateway before b exists
	a.waitErr(t, "Serving a cluster binding")
	b := start("b")
	b.waitErr(t, "Joined the cluster")

	bot := map[string]any{"id": fakediscord.BotID, "username": fakediscord.BotName, "bot": true}
	mention := func(id, text string) {
		f.Post(t, fakediscord.MessageEvent(id, "C1", "G1", "7", "<@"+fakediscord.BotID+"> "+text, map[string]any{"mentions": []any{bot}}))
	}
	posts := func(sub string) []string {
		var out []string
		for _, m := range f.Posts() {
			if m.ChannelID == "C1" && strings.Contains(m.Content, sub) {
				out = append(out, m.Content)
			}
		}
		return out
	}
	mention("1001", "before the kill")
	f.Wait(t, "a's answer", func() bool { return len(posts("echo: ")) == 1 })
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	// Discord replays nothing to a new session: only what is sent once b
	// is connected reaches it.
	b.waitErr(t, "Discord bot connected")
	b.waitErr(t, "Serving a cluster binding")
	mention("1002", "after the kill")
	mention("1003", "and again")
	f.Wait(t, "b's answers", func() bool { return len(posts("echo: ")) == 3 })
	echoes := posts("echo: ")
	for i, w := range []string{"before the kill", "after the kill", "and again"} {
		if !strings.HasSuffix(strings.Split(echoes[i], "\n")[max(0, len(strings.Split(echoes[i], "\n"))-2)], w) {
			t.Errorf("answer %d = %q, want the answer to %q (in order, once each)", i, echoes[i], w)
		}
	}
	// Notices only: an answer may quote the notice among the thread's
	// earlier messages. One per move: the kill's, and any a starved
	// renewal made (see tenureStart); the first names b.
	notices := slices.DeleteFunc(posts("moved to host"), func(p string) bool { return strings.HasPrefix(p, "echo: ") })
	if n := notices; len(n) == 0 || len(n) > max(1, movesOf(a, b)) || !strings.Contains(n[0], "moved to host b") {
		t.Errorf("moved notices in the channel: %q, want one naming host b (one per move: %d)", n, max(1, movesOf(a, b)))
	}
}
