package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// waitParked waits until a conversation's record under state keeps a
// request that waits on people, naming sub (its prompt's message).
func waitParked(t *testing.T, state, sub string) {
	t.Helper()
	waitFile(t, "the request in the conversation's record", func() bool {
		records, _ := filepath.Glob(filepath.Join(state, "sessions", "*.json"))
		for _, r := range records {
			if b, err := os.ReadFile(r); err == nil && strings.Contains(string(b), sub) && strings.Contains(string(b), `"parked":`) {
				return true
			}
		}
		return false
	})
}

// TestRealCLIApprovalOutlivesKillOnTelegram is TestRealCLIApprovalOutlivesKill
// in a Telegram forum topic: the old prompt's Allow button, pressed after
// the restart, lets the command run, and nobody is asked twice.
func TestRealCLIApprovalOutlivesKillOnTelegram(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	f := faketelegram.New(t)
	path, ws, env := teamConfig(t, claude, fmt.Sprintf(`
[[platforms]]
name = "tg"
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
[[bindings]]
platform = "tg"
channel = "*"
workspace = "ws"
allow_users = ["7"]
`, f.URL()))
	env = append(env, "TELEGRAM_BOT_TOKEN="+faketelegram.Token, "CC_CONNECT_TEST_API_URL="+api.URL())
	state := filepath.Join(filepath.Dir(path), "state")
	p := startBinaryEnv(t, env, "run", "--config", path)
	f.Wait(t, "the first poll", func() bool { return len(f.Calls("getUpdates")) > 0 })
	limit := testenv.HangLimit(t, 60*time.Second)
	f.SetWaitLimit(limit)

	alice := faketelegram.User(7, "alice", false)
	const forumID, topic = -1002, 90
	f.Send(map[string]any{
		"chat": map[string]any{"id": forumID, "type": "supergroup", "is_forum": true, "title": "dev"},
		"from": alice, "text": "@" + faketelegram.BotUsername + " make it [[TOOL:touch made.txt]]",
		"entities":          []any{map[string]any{"type": "mention", "offset": 0, "length": 1 + len(faketelegram.BotUsername)}},
		"message_thread_id": topic, "is_topic_message": true,
	})
	isPrompt := func(m faketelegram.Message) bool {
		for _, b := range m.Buttons() {
			if isAllow(b.Text) {
				return m.ThreadID == topic
			}
		}
		return false
	}
	prompt := f.WaitSent(t, "the permission prompt", isPrompt)
	allow := ""
	for _, b := range prompt.Buttons() {
		if isAllow(b.Text) {
			allow = b.Text
		}
	}
	if allow == "" {
		t.Fatalf("no Allow button on the prompt: %+v", prompt.Buttons())
	}
	waitParked(t, state, `"parked":`)
	if !kill(t, p, 0) {
		t.Fatalf("cc-connect exited by itself:\n%s", p.stderr.String())
	}
	polls := len(f.Calls("getUpdates"))

	last := startBinaryEnv(t, env, "run", "--config", path)
	f.Wait(t, "the restarted instance's poll", func() bool { return len(f.Calls("getUpdates")) > polls })
	f.WaitSent(t, "the notice that the request still waits", func(m faketelegram.Message) bool {
		return m.ThreadID == topic && strings.Contains(m.Text, "still waits for an answer")
	})
	f.Press(t, prompt, allow, alice)
	f.WaitSent(t, "the resumed turn's reply", func(m faketelegram.Message) bool {
		return m.ThreadID == topic && strings.Contains(m.Text, "tool said:")
	})
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err != nil {
		t.Fatalf("made.txt was not made: %v", err)
	}
	n := 0
	for _, c := range f.Calls("sendMessage") {
		if strings.Contains(c.Form.Get("reply_markup"), allow) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d prompts sent, want the first one only", n)
	}
	if err := last.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := last.exitCode(t); code != 0 {
		t.Errorf("the last instance exited %d", code)
	}
}
