package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestSlackParkedMessageSurvivesKills: the built binary, on Slack with the
// fake claude, parks a message Claude refused for a usage limit (no reset
// given: the agent.limit_retry back-off). It is SIGKILLed while the
// message waits, and again once the message ran at the window's reset and
// Claude answered it, while that answer's post is in flight (the fake
// holds it; the kill drops it). The message reaches Claude twice in all
// (the refusal and one run), and its answer shows in the thread once.
func TestSlackParkedMessageSurvivesKills(t *testing.T) {
	f := fakeslack.New(t)
	dir := t.TempDir()
	record := filepath.Join(dir, "record.jsonl")
	path := writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q, FAKECLAUDE_RECORD = %q }
shutdown_grace = "5s"
limit_retry = "3s"
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
sender_header = false
`, fakeclaude.Build(t), filepath.Join(dir, "claude-config"), record, f.APIURL()))
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken, "TMPDIR=" + tmp}
	limited := filepath.Join(dir, "limited")
	if err := os.WriteFile(limited, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	prompt := "[[LIMIT:" + limited + "]] parked"
	answer := func(m fakeslack.Message) bool { return strings.Contains(m.Text, "echo: "+prompt) }
	release := f.HoldWhere("chat.postMessage", func(form map[string]string) bool {
		return strings.Contains(form["text"], "echo: "+prompt)
	})
	t.Cleanup(release)

	p := startBinaryEnv(t, env, "run", "--config", path)
	f.WaitConn(t, 1)
	const ts = "1700000970.000100"
	f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> "+prompt, nil))
	f.WaitPost(t, "the usage-limit notice", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "usage limit is reached")
	})
	// Killed while the message waits for the window (3 s from the refusal).
	if !kill(t, p, 0) {
		t.Fatalf("cc-connect exited by itself:\n%s", p.stderr.String())
	}
	if err := os.Remove(limited); err != nil { // Claude accepts it from now on
		t.Fatal(err)
	}

	second := startBinaryEnv(t, env, "run", "--config", path)
	f.WaitConn(t, 2)
	// At the reset the message runs, and its answer's post is held: killed
	// with Claude's answer written and not posted.
	f.WaitHeld(t, "chat.postMessage", 1)
	if !kill(t, second, 0) {
		t.Fatalf("cc-connect exited by itself:\n%s", second.stderr.String())
	}
	release()
	if n := slackPostsIn(f, ts, "echo: "+prompt); n != 0 {
		t.Fatalf("the held answer landed %d times before the restart", n)
	}

	last := startBinaryEnv(t, env, "run", "--config", path)
	f.WaitConn(t, 3)
	f.WaitPost(t, "the parked message's answer", func(m fakeslack.Message) bool { return m.ThreadTS == ts && answer(m) })
	if err := last.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := last.exitCode(t); code != 0 {
		t.Errorf("the last instance exited %d", code)
	}
	if n := slackPostsIn(f, ts, "echo: "+prompt); n != 1 {
		t.Errorf("the parked message's answer shows %d times in the thread, want once", n)
	}
	n := 0
	for _, text := range fakeclaude.Texts(fakeclaude.ReadRecord(t, record)) {
		if text == prompt {
			n++
		}
	}
	if n != 2 {
		t.Errorf("claude read the parked message %d times, want twice (the refusal and one run)", n)
	}
}
