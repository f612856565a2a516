package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
)

// startTelegramMember starts host name of a cluster of a and b on one
// bot token (the fake Telegram) and one NATS server; standby is the
// binding's standby list as TOML ("" for none).
func startTelegramMember(t *testing.T, srvURL string, f *faketelegram.Server, name, standby string) *process {
	t.Helper()
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
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = ["7"]
host = "a"
standby = [%s]
progress = "quiet"
sender_header = false
`, fakeclaude.Build(t), filepath.Join(dir, "cc"), name, srvURL, f.URL(), standby))
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	return startBinaryEnv(t, []string{"TMPDIR=" + tmp, "TELEGRAM_BOT_TOKEN=" + faketelegram.Token}, "run", "--config", cfg)
}

// TestClusterTelegramPollerKilled: two cc-connect binaries on one bot
// token, one NATS server, the fake Telegram. Host a polls and owns the
// binding; kill -9 of a moves both to its standby b, which polls from
// the stored offset: every message, before and after the kill, is
// answered exactly once, and those sent after it in the order sent. The
// chat, new to b, is told once that it moved to b.
func TestClusterTelegramPollerKilled(t *testing.T) {
	t.Parallel()
	srv := clustertest.Single(t)
	f := faketelegram.New(t)
	a := startTelegramMember(t, srv.ClientURL(), f, "a", `"b"`)
	a.waitErr(t, "Telegram polling on this host") // a holds the poller before b exists
	a.waitErr(t, "Serving a cluster binding")
	b := startTelegramMember(t, srv.ClientURL(), f, "b", `"b"`)
	b.waitErr(t, "Joined the cluster") // a standby: it serves nothing yet

	alice := faketelegram.User(7, "alice", false)
	say := func(text string) {
		f.Send(map[string]any{"chat": map[string]any{"id": 42, "type": "private"}, "from": alice, "text": text})
	}
	// answers lists, in the order posted, the texts answered in chat 42.
	answers := func() []string {
		var out []string
		for _, m := range f.Sent() {
			if m.ChatID == 42 && strings.HasPrefix(m.Text, "echo: ") {
				// The message is the prompt's last line (the first turn
				// on the standby carries the chat so far before it), then
				// comes the context figure.
				lines := strings.Split(m.Text, "\n")
				out = append(out, strings.TrimPrefix(lines[max(0, len(lines)-2)], "echo: "))
			}
		}
		return out
	}
	var want []string
	for i := range 3 {
		want = append(want, fmt.Sprintf("before-%d", i))
		say(want[len(want)-1])
	}
	f.Wait(t, "the answers before the kill", func() bool { return len(answers()) >= len(want) })
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	for i := range 4 {
		want = append(want, fmt.Sprintf("after-%d", i))
		say(want[len(want)-1])
	}
	b.waitErr(t, "Telegram polling on this host")
	f.Wait(t, "the answers after the kill", func() bool { return len(answers()) >= len(want) })
	if got := answers(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("answered %q, want each of %q once, in order", got, want)
	}
	// A private chat has no threads: its every message continues the
	// conversation a served, so b says once where it went, though no
	// event came to it twice.
	var notices []string
	for _, m := range f.Sent() {
		if m.ChatID == 42 && strings.Contains(m.Text, "moved to host") {
			notices = append(notices, m.Text)
		}
	}
	// One per move: the kill's, and any a starved renewal made (see
	// tenureStart); the first names b.
	if moves := max(1, movesOf(a, b)); len(notices) == 0 || len(notices) > moves ||
		!strings.Contains(notices[0], "moved to host b (the host that served it is not serving") {
		t.Errorf("moved notices in the chat: %q, want one naming host b (one per move: %d)", notices, moves)
	}
}

// TestClusterTelegramOwnerNotPolling: host b polls, host a owns the
// binding (b does not stand by, so it serves nothing). A group's chatter
// the bot ignores and a mention both reach a only through the stream; a
// hands each to its adapter (NoteSeen), so the first turn's prompt
// carries the chatter as the chat's earlier messages, as on a lone host,
// and a new session on a is not blind to what b polled.
func TestClusterTelegramOwnerNotPolling(t *testing.T) {
	t.Parallel()
	srv := clustertest.Single(t)
	f := faketelegram.New(t)
	b := startTelegramMember(t, srv.ClientURL(), f, "b", "")
	b.waitErr(t, "Telegram polling on this host")
	a := startTelegramMember(t, srv.ClientURL(), f, "a", "")
	a.waitErr(t, "Serving a cluster binding")
	if strings.Contains(a.stderr.String(), "Telegram polling on this host") {
		t.Fatal("the owner polls: the test needs the poller elsewhere")
	}

	group := map[string]any{"id": -100, "type": "group", "title": "dev"}
	alice := faketelegram.User(7, "alice", false)
	f.Send(map[string]any{"chat": group, "from": alice, "text": "chatter the bot was not asked about"})
	f.Send(map[string]any{"chat": group, "from": alice, "text": "@" + faketelegram.BotUsername + " what was said?"})
	var reply string
	f.Wait(t, "the answer to the mention", func() bool {
		for _, m := range f.Sent() {
			if m.ChatID == -100 && strings.Contains(m.Text, "what was said?") {
				reply = m.Text
				return true
			}
		}
		return false
	})
	if !strings.Contains(reply, "chatter the bot was not asked about") {
		t.Errorf("the owner's first prompt lacks the chat's earlier message that another host polled:\n%s", reply)
	}
	if strings.Contains(b.stderr.String(), "Serving a cluster binding") {
		t.Error("the poller served the binding")
	}
}
