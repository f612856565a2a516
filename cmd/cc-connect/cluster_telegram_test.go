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

// TestClusterTelegramPollerKilled: two cc-connect binaries on one bot
// token, one NATS server, the fake Telegram. Host a polls and owns the
// binding; kill -9 of a moves both to its standby b, which polls from
// the stored offset: every message, before and after the kill, is
// answered exactly once, and those sent after it in the order sent.
func TestClusterTelegramPollerKilled(t *testing.T) {
	t.Parallel()
	srv := clustertest.Single(t)
	f := faketelegram.New(t)
	claude := fakeclaude.Build(t)
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
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
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
`, claude, filepath.Join(dir, "cc"), name, srv.ClientURL(), f.URL()))
		tmp := filepath.Join(dir, "tmp")
		if err := os.Mkdir(tmp, 0o700); err != nil {
			t.Fatal(err)
		}
		return startBinaryEnv(t, []string{"TMPDIR=" + tmp, "TELEGRAM_BOT_TOKEN=" + faketelegram.Token}, "run", "--config", cfg)
	}
	a := start("a")
	a.waitErr(t, "Telegram polling on this host") // a holds the poller before b exists
	a.waitErr(t, "Serving a cluster binding")
	b := start("b")
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
}
