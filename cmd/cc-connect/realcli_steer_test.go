package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestRealCLISteerThroughSlack: through the binary on Slack with the real
// CLI and follow_ups = "steer", a message sent in the thread while a turn
// runs a command goes into that turn: the CLI hands it to the model with
// the command's result, Slack's message gets 👀, and the thread gets one
// reply that answers both.
func TestRealCLISteerThroughSlack(t *testing.T) {
	t.Parallel()
	f := fakeslack.New(t)
	f.SetWaitLimit(min(testenv.HangLimit(t, 2*time.Minute), 3*time.Minute))
	r, api := startRealChatWith(t, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
`, f.APIURL()), `"U1"`, `follow_ups = "steer"`, "SLACK_BOT_TOKEN="+fakeslack.BotToken, "SLACK_APP_TOKEN="+fakeslack.AppToken)
	defer r.stop(t)
	f.WaitConn(t, 1)
	gate, running := filepath.Join(r.ws, "gate"), filepath.Join(r.ws, "running")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	const ts, ts2 = "1700000201.000100", "1700000201.000200"
	inThread := map[string]any{"thread_ts": ts}
	// The thread's root starts the turn; the follow-up is the thread's
	// first reply after the start, which is read back against the
	// thread's history (a gap check) before it goes into the turn.
	f.Deliver(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> [[TOOL:touch running; while [ ! -f gate ]; do sleep 0.05; done; echo opened]]", nil))
	pollUntil(t, "the command to run", func() bool { _, err := os.Stat(running); return err == nil })
	before := len(f.Posts())
	f.Deliver(t, fakeslack.MsgEvent("C1", ts2, "U1", "<@UBOT> use the other file", inThread))
	// Journaled as steered into the running turn before it is written.
	pollUntil(t, "the follow-up journaled as steered", func() bool { return journalHas(t, r.state, `"into":`) })
	id := steeredUUID(t, r.state)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.WaitPost(t, "one reply for both", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "tool said: opened") && strings.Contains(m.Text, "and you said:") &&
			strings.Contains(m.Text, "use the other file")
	})
	f.Wait(t, "👀 on the follow-up", func() bool {
		for _, c := range f.Succeeded("reactions.add") {
			if c.Form["timestamp"] == ts2 && c.Form["name"] == "eyes" {
				return true
			}
		}
		return false
	})
	// What recovery after a kill relies on: the CLI's transcript shows
	// the steered message taken in, under the uuid it was written with.
	if !transcriptShowsAbsorbed(t, r.dir, id) {
		t.Errorf("no transcript shows the steered message %s taken in", id)
	}
	notes := 0
	for _, rq := range api.Requests() {
		notes += len(rq.MidTurnNotes)
	}
	if notes != 1 {
		t.Errorf("%d mid-turn notes reached the API, want the follow-up once", notes)
	}
	if n := slackPostsIn(f, ts, "tool said"); n != 1 {
		t.Errorf("%d replies in the thread, want one", n)
	}
	for _, m := range f.Posts()[before:] {
		if strings.Contains(m.Text, "Queued (position") {
			t.Errorf("the follow-up was told it waits: %q", m.Text)
		}
	}
}

// journalHas reports whether an inbox journal under state holds sub.
func journalHas(t *testing.T, state, sub string) bool {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(state, "inbox", "*.jsonl"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), sub) {
			return true
		}
	}
	return false
}

// pollUntil checks cond, which no fake server is told of (a file the
// command or cc-connect writes), every 50 ms until it holds.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(min(testenv.HangLimit(t, 2*time.Minute), 3*time.Minute))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// steeredUUID is the uuid of the message journaled as steered under state.
func steeredUUID(t *testing.T, state string) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(state, "inbox", "*.jsonl"))
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		for _, line := range strings.Split(string(b), "\n") {
			var rec struct {
				UUID string `json:"uuid"`
				Into string `json:"into"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Into != "" && rec.UUID != "" {
				return rec.UUID
			}
		}
	}
	t.Fatal("no journal entry marked as steered")
	return ""
}

// transcriptShowsAbsorbed reports whether a Claude Code transcript under
// dir shows the message sent with uuid id taken into a running turn.
func transcriptShowsAbsorbed(t *testing.T, dir, id string) bool {
	t.Helper()
	found := false
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, "projects") && strings.HasSuffix(p, ".jsonl") {
			if has, err := agentproc.ContainsAbsorbed(p, id); err == nil && has {
				found = true
			}
		}
		return nil
	})
	return found
}

// TestRealCLISteerThroughTelegram is TestRealCLISteerThroughSlack in a
// Telegram forum topic: the follow-up goes into the running turn, gets
// 👀, and the topic gets one reply that answers both.
func TestRealCLISteerThroughTelegram(t *testing.T) {
	t.Parallel()
	f := faketelegram.New(t)
	f.SetWaitLimit(min(testenv.HangLimit(t, 2*time.Minute), 3*time.Minute))
	r, api := startRealChatWith(t, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
`, f.URL()), `"7"`, `follow_ups = "steer"`, "TELEGRAM_BOT_TOKEN="+faketelegram.Token)
	defer r.stop(t)
	f.Wait(t, "the first poll", func() bool { return len(f.Calls("getUpdates")) > 0 })
	gate, running := filepath.Join(r.ws, "gate"), filepath.Join(r.ws, "running")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	alice := faketelegram.User(7, "alice", false)
	const forumID, topic = -1001, 89
	mention := func(text string) int {
		return f.Send(map[string]any{
			"chat": map[string]any{"id": forumID, "type": "supergroup", "is_forum": true, "title": "dev"},
			"from": alice, "text": "@" + faketelegram.BotUsername + " " + text,
			"entities":          []any{map[string]any{"type": "mention", "offset": 0, "length": 1 + len(faketelegram.BotUsername)}},
			"message_thread_id": topic, "is_topic_message": true,
		})
	}
	// The follow-up is the topic's second message after the start, read
	// back against what the adapter saw (a gap check) before it goes
	// into the turn.
	mention("[[TOOL:touch running; while [ ! -f gate ]; do sleep 0.05; done; echo opened]]")
	pollUntil(t, "the command to run", func() bool { _, err := os.Stat(running); return err == nil })
	before := len(f.Sent())
	follow := mention("use the other file")
	pollUntil(t, "the follow-up journaled as steered", func() bool { return journalHas(t, r.state, `"into":`) })
	id := steeredUUID(t, r.state)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.WaitSent(t, "one reply for both", func(m faketelegram.Message) bool {
		return m.ThreadID == topic && strings.Contains(m.Text, "tool said: opened") && strings.Contains(m.Text, "and you said:") &&
			strings.Contains(m.Text, "use the other file")
	})
	f.WaitMessage(t, forumID, follow, "👀 on the follow-up", func(m faketelegram.Message) bool {
		return slices.Contains(m.Reactions, "👀")
	})
	if !transcriptShowsAbsorbed(t, r.dir, id) {
		t.Errorf("no transcript shows the steered message %s taken in", id)
	}
	notes := 0
	for _, rq := range api.Requests() {
		notes += len(rq.MidTurnNotes)
	}
	if notes != 1 {
		t.Errorf("%d mid-turn notes reached the API, want the follow-up once", notes)
	}
	n := 0
	for _, m := range f.Sent() {
		if m.ThreadID == topic && strings.Contains(m.Text, "tool said") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d replies in the topic, want one", n)
	}
	for _, m := range f.Sent()[before:] {
		if strings.Contains(m.Text, "Queued (position") {
			t.Errorf("the follow-up was told it waits: %q", m.Text)
		}
	}
}
