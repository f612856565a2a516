package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// What a turn changed, through the binary with the real CLI (checkpoints
// on by default): the fake Messages API makes Claude write a file, the turn
// ends with a summary and its Revert button, !diff uploads the diff, a
// press by someone who may not approve is refused, and the approver's press
// deletes the file: on Slack (!diff, !status and the presses after a
// restart of cc-connect), Telegram and Discord.

// writeTurn is the prompt that makes Claude write new.txt (three lines).
const writeTurn = "[[WRITE:new.txt:a\nb\nc]]"

func TestRealCLIRevertThroughSlack(t *testing.T) {
	t.Parallel()
	f := fakeslack.New(t)
	f.SetWaitLimit(min(testenv.HangLimit(t, 2*time.Minute), 3*time.Minute))
	platformTOML := fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
`, f.APIURL())
	tokens := []string{"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken}
	r, api := startRealChatWith(t, platformTOML, `"U1", "U2"`, `approvers = ["U1"]`, tokens...)
	f.WaitConn(t, 1)
	const ts = "1700000301.000100"
	f.Deliver(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> "+writeTurn, nil))
	var summary fakeslack.Message
	f.WaitPost(t, "the turn's summary with its Revert button", func(m fakeslack.Message) bool {
		if m.ThreadTS == ts && strings.Contains(m.Text, "This turn changed 1 file (+3 −0)") && len(m.Buttons()) == 1 {
			summary = m
			return true
		}
		return false
	})
	file := filepath.Join(r.ws, "new.txt")
	if b, err := os.ReadFile(file); err != nil || string(b) != "a\nb\nc" {
		t.Fatalf("new.txt = %q, %v; want what Claude wrote", b, err)
	}
	// A restart in between: !diff and the button work from the state dir.
	r.stop(t)
	path := filepath.Join(r.dir, "config.toml")
	r.p = startBinaryEnv(t, append([]string{"TMPDIR=" + filepath.Join(r.dir, "tmp"), "CC_CONNECT_TEST_API_URL=" + api.URL()}, tokens...),
		"run", "--config", path)
	defer r.stop(t)
	f.WaitConn(t, 2)

	inThread := map[string]any{"thread_ts": ts}
	f.Deliver(t, fakeslack.MsgEvent("C1", "1700000301.000200", "U2", "<@UBOT> !diff", inThread))
	var up fakeslack.Upload
	f.WaitWithin(t, testenv.HangLimit(t, time.Minute), "the diff uploaded into the thread", func() bool {
		for _, u := range f.Uploads() {
			if u.ThreadTS == ts && strings.HasSuffix(u.Name, ".diff") {
				up = u
				return true
			}
		}
		return false
	})
	if want := "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n"; string(up.Data) != want {
		t.Errorf("the diff %q, want %q", up.Data, want)
	}

	f.Deliver(t, fakeslack.MsgEvent("C1", "1700000301.000210", "U2", "<@UBOT> !status", inThread))
	f.WaitPost(t, "!status with the last turn's changes, revertible", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "Last turn changed: 1 file (+3 −0): `new.txt`\nRevert: possible")
	})

	revert := summary.Buttons()[0].ActionID
	f.WaitAck(t, f.Press(t, summary, revert, "U2"))
	f.WaitPost(t, "the refusal of a press by someone who may not approve", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "may not revert turns here")
	})
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("new.txt after a refused press: %v", err)
	}
	f.WaitAck(t, f.Press(t, summary, revert, "U1"))
	f.WaitPost(t, "what the revert restored", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "reverted the last turn: `new.txt`")
	})
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("new.txt after the revert: %v, want it gone", err)
	}
	f.Deliver(t, fakeslack.MsgEvent("C1", "1700000301.000300", "U1", "<@UBOT> !revert", inThread))
	f.WaitPost(t, "the refusal of a second revert", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "cannot be reverted twice")
	})
	f.Deliver(t, fakeslack.MsgEvent("C1", "1700000301.000400", "U2", "<@UBOT> !status", inThread))
	f.WaitPost(t, "!status with the last turn's changes, reverted", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "Last turn changed: 1 file (+3 −0): `new.txt`\nRevert: not possible. The last turn was already reverted (by ")
	})
}

// TestRealCLIRevertThroughTelegram: the same on Telegram, with !revert
// typed and the summary's button pressed by someone who may not approve;
// !status shows the turn's changes.
func TestRealCLIRevertThroughTelegram(t *testing.T) {
	t.Parallel()
	f := faketelegram.New(t)
	f.SetWaitLimit(min(testenv.HangLimit(t, 2*time.Minute), 3*time.Minute))
	r, _ := startRealChatWith(t, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
`, f.URL()), `"7", "8"`, `approvers = ["7"]`, "TELEGRAM_BOT_TOKEN="+faketelegram.Token)
	defer r.stop(t)
	f.Wait(t, "the first poll", func() bool { return len(f.Calls("getUpdates")) > 0 })
	const group = -1002
	say := func(from map[string]any, text string) int {
		return f.Send(map[string]any{
			"chat": map[string]any{"id": group, "type": "group", "title": "dev"},
			"from": from, "text": "@" + faketelegram.BotUsername + " " + text,
			"entities": []any{map[string]any{"type": "mention", "offset": 0, "length": 1 + len(faketelegram.BotUsername)}},
		})
	}
	alice, bob := faketelegram.User(7, "alice", false), faketelegram.User(8, "bob", false)
	say(alice, writeTurn)
	var summary faketelegram.Message
	f.WaitSent(t, "the turn's summary with its Revert button", func(m faketelegram.Message) bool {
		if strings.Contains(m.Text, "This turn changed 1 file (+3 −0)") && m.ReplyMarkup != "" {
			summary = m
			return true
		}
		return false
	})
	file := filepath.Join(r.ws, "new.txt")
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("new.txt: %v", err)
	}
	say(bob, "!diff")
	var doc faketelegram.SentFile
	f.Wait(t, "the diff sent as a document", func() bool {
		for _, c := range f.Calls("sendDocument") {
			if d, ok := c.Files["document"]; ok && strings.HasSuffix(d.Name, ".diff") {
				doc = d
				return true
			}
		}
		return false
	})
	if want := "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n"; string(doc.Data) != want {
		t.Errorf("the diff %q, want %q", doc.Data, want)
	}
	say(bob, "!status")
	f.WaitSent(t, "!status with the last turn's changes, revertible", func(m faketelegram.Message) bool {
		return strings.Contains(m.Text, "Last turn changed: 1 file (+3 −0): new.txt\nRevert: possible")
	})
	f.Press(t, summary, "Revert this turn", bob)
	f.WaitSent(t, "the refusal of bob's press", func(m faketelegram.Message) bool {
		return strings.Contains(m.Text, "may not revert turns here")
	})
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("new.txt after a refused press: %v", err)
	}
	say(alice, "!revert")
	f.WaitSent(t, "what the revert restored", func(m faketelegram.Message) bool {
		return strings.Contains(m.Text, "reverted the last turn")
	})
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("new.txt after the revert: %v, want it gone", err)
	}
}

// TestRealCLIRevertThroughDiscord: the same on Discord, in the thread of
// the message: the summary's button for someone who may not approve, then
// for an approver.
func TestRealCLIRevertThroughDiscord(t *testing.T) {
	t.Parallel()
	f := fakediscord.New(t)
	f.AddChannel(fakediscord.Channel{ID: "C1", Type: 0, GuildID: "G1", Name: "dev"})
	r, _ := startRealChatWith(t, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "discord"
token = "${DISCORD_BOT_TOKEN}"
api_url = %q
thread_per_message = true
`, f.URL()), `"7", "8"`, `approvers = ["7"]`, "DISCORD_BOT_TOKEN="+fakediscord.Token)
	defer r.stop(t)
	f.WaitConnected(t, 1)
	bot := map[string]any{"id": fakediscord.BotID, "username": fakediscord.BotName, "bot": true}
	f.Post(t, fakediscord.MessageEvent("2001", "C1", "G1", "7", "<@"+fakediscord.BotID+"> "+writeTurn, map[string]any{"mentions": []any{bot}}))
	limit := testenv.HangLimit(t, 2*time.Minute)
	var summary fakediscord.Message
	f.WaitWithin(t, limit, "the turn's summary with its Revert button", func() bool {
		for _, m := range f.Posts() {
			if m.ChannelID == "2001" && strings.Contains(m.Content, "This turn changed 1 file (+3 −0)") && len(m.Buttons()) == 1 {
				summary = m
				return true
			}
		}
		return false
	})
	file := filepath.Join(r.ws, "new.txt")
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("new.txt: %v", err)
	}
	revert := summary.Buttons()[0].CustomID
	f.Click(t, summary, revert, "8", "bob")
	f.WaitWithin(t, limit, "the refusal of bob's press", func() bool {
		for _, m := range f.Posts() {
			if m.ChannelID == "2001" && strings.Contains(m.Content, "may not revert turns here") {
				return true
			}
		}
		return false
	})
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("new.txt after a refused press: %v", err)
	}
	f.Click(t, summary, revert, "7", "alice")
	f.WaitWithin(t, limit, "what the revert restored", func() bool {
		for _, m := range f.Posts() {
			if m.ChannelID == "2001" && strings.Contains(m.Content, "reverted the last turn: `new.txt`") {
				return true
			}
		}
		return false
	})
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("new.txt after the revert: %v, want it gone", err)
	}
}
