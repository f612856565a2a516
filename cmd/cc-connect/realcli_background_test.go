package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// startRealChat runs the built binary with the real claude CLI against the
// fake Messages API, on one chat platform (platformTOML names it "chat").
// Bash runs without prompts (bypassPermissions, allowed as root only in a
// sandbox), so a background command starts at once.
func startRealChat(t *testing.T, platformTOML, allowUsers string, env ...string) (*chatRun, *fakeapi.Server) {
	t.Helper()
	return startRealChatFull(t, "", platformTOML, allowUsers, "", env...)
}

// startRealChatWith is startRealChat with more keys for the binding
// (bindingTOML, lines of key = value).
func startRealChatWith(t *testing.T, platformTOML, allowUsers, bindingTOML string, env ...string) (*chatRun, *fakeapi.Server) {
	t.Helper()
	return startRealChatFull(t, "", platformTOML, allowUsers, bindingTOML, env...)
}

// startRealChatAgent is startRealChat with more [agent] keys.
func startRealChatAgent(t *testing.T, agentTOML, platformTOML, allowUsers string, env ...string) (*chatRun, *fakeapi.Server) {
	t.Helper()
	return startRealChatFull(t, agentTOML, platformTOML, allowUsers, "", env...)
}

// startRealChatFull is startRealChat with more [agent] keys and more keys
// for the binding.
func startRealChatFull(t *testing.T, agentTOML, platformTOML, allowUsers, bindingTOML string, env ...string) (*chatRun, *fakeapi.Server) {
	t.Helper()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &chatRun{dir: dir, ws: filepath.Join(dir, "ws"), state: filepath.Join(dir, "state")}
	path := writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
permission_mode = "bypassPermissions"
shutdown_grace = "5s"
%s
[agent.env]
HOME = %q
CLAUDE_CONFIG_DIR = %q
ANTHROPIC_BASE_URL = "${CC_CONNECT_TEST_API_URL}"
ANTHROPIC_API_KEY = "sk-cc-connect-test-key"
DISABLE_TELEMETRY = "1"
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"
DISABLE_AUTOUPDATER = "1"
IS_SANDBOX = "1"
%s
[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = [%s]
%s
`, claude, agentTOML, home, filepath.Join(home, ".claude"), platformTOML, allowUsers, bindingTOML))
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	r.p = startBinaryEnv(t, append([]string{"TMPDIR=" + tmp, "CC_CONNECT_TEST_API_URL=" + api.URL()}, env...),
		"run", "--config", path)
	return r, api
}

// bgPrompt starts a background command that ends when gate exists.
func bgPrompt(gate string) string {
	return "[[BG:while [ ! -f " + gate + " ]; do sleep 0.05; done; echo bgdone]]"
}

// TestRealCLIBackgroundThroughSlack: through the binary on Slack with the
// real CLI, a background command that ends after the turn's reply brings
// Claude's own answer into the same thread, once; !status lists the task
// while it runs.
func TestRealCLIBackgroundThroughSlack(t *testing.T) {
	t.Parallel()
	f := fakeslack.New(t)
	// The real CLI's start alone takes seconds on a loaded machine.
	f.SetWaitLimit(min(testenv.HangLimit(t, 2*time.Minute), 3*time.Minute))
	r, _ := startRealChat(t, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
`, f.APIURL()), `"U1"`, "SLACK_BOT_TOKEN="+fakeslack.BotToken, "SLACK_APP_TOKEN="+fakeslack.AppToken)
	defer r.stop(t)
	f.WaitConn(t, 1)
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	const ts = "1700000101.000100"
	f.Deliver(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> "+bgPrompt(gate), nil))
	f.WaitPost(t, "the turn's reply", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "Command running in background")
	})
	inThread := map[string]any{"thread_ts": ts}
	f.Deliver(t, fakeslack.MsgEvent("C1", "1700000101.000200", "U1", "<@UBOT> !status", inThread))
	f.WaitPost(t, "!status with the task", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "Background tasks running: Run in the background")
	})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.WaitPost(t, "Claude's own answer in the thread", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, `⚙️ Background command "Run in the background" completed`) &&
			strings.Contains(m.Text, "background task: ")
	})
	f.Deliver(t, fakeslack.MsgEvent("C1", "1700000101.000300", "U1", "<@UBOT> after", inThread))
	f.WaitPost(t, "the next message's own reply", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "\nafter")
	})
	if n := slackPostsIn(f, ts, "background task: "); n != 1 {
		t.Errorf("%d own answers in the thread, want 1", n)
	}
}

// TestRealCLIBackgroundThroughTelegram is the same on Telegram, in a forum
// topic.
func TestRealCLIBackgroundThroughTelegram(t *testing.T) {
	t.Parallel()
	f := faketelegram.New(t)
	f.SetWaitLimit(min(testenv.HangLimit(t, 2*time.Minute), 3*time.Minute))
	r, _ := startRealChat(t, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
`, f.URL()), `"7"`, "TELEGRAM_BOT_TOKEN="+faketelegram.Token)
	defer r.stop(t)
	f.Wait(t, "the first poll", func() bool { return len(f.Calls("getUpdates")) > 0 })
	alice := faketelegram.User(7, "alice", false)
	const forumID, topic = -1001, 88
	mention := func(text string) int {
		return f.Send(map[string]any{
			"chat": map[string]any{"id": forumID, "type": "supergroup", "is_forum": true, "title": "dev"},
			"from": alice, "text": "@" + faketelegram.BotUsername + " " + text,
			"entities":          []any{map[string]any{"type": "mention", "offset": 0, "length": 1 + len(faketelegram.BotUsername)}},
			"message_thread_id": topic, "is_topic_message": true,
		})
	}
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	mention(bgPrompt(gate))
	f.WaitSent(t, "the turn's reply", func(m faketelegram.Message) bool {
		return m.ThreadID == topic && strings.Contains(m.Text, "Command running in background")
	})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.WaitSent(t, "Claude's own answer in the topic", func(m faketelegram.Message) bool {
		return m.ThreadID == topic && strings.Contains(m.Text, "⚙️ Background command") && strings.Contains(m.Text, "background task: ")
	})
	n := 0
	for _, m := range f.Sent() {
		if strings.Contains(m.Text, "background task: ") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d own answers, want 1", n)
	}
}
