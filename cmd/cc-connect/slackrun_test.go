package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestSlackThroughTheBinary runs cc-connect with a Slack platform whose
// api_url is the fake Slack: Socket Mode in, Web API out, the fake claude
// behind the engine.
func TestSlackThroughTheBinary(t *testing.T) {
	t.Parallel()
	f := fakeslack.New(t)
	r := startChat(t, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
`, f.APIURL()), `"U1", "U2"`, "SLACK_BOT_TOKEN="+fakeslack.BotToken, "SLACK_APP_TOKEN="+fakeslack.AppToken)
	f.WaitConn(t, 1)

	t.Run("a mention gets one threaded reply with the context figure", func(t *testing.T) {
		const ts = "1700000001.000100"
		// Slack sends a mention twice: as a message and as an app_mention.
		f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> hello there", nil))
		// The event names its sender by id; the prompt's sender header
		// names them as Slack's profile does (users.info, read by the
		// conversation through the adapter).
		reply := f.WaitPost(t, "the reply in the thread", func(m fakeslack.Message) bool {
			return m.Channel == "C1" && m.ThreadTS == ts && strings.Contains(m.Text, "message from Display U1 (") && strings.Contains(m.Text, "\nhello there")
		})
		if !ctxFigure.MatchString(reply.Text) {
			t.Errorf("reply %q does not end with the context figure", reply.Text)
		}
		// 👀 while the turn ran, ✅ after, both on the user's message.
		f.WaitMessage(t, "C1", ts, "✅ when the turn is done", func(m fakeslack.Message) bool {
			return slices.Equal(m.Reactions, []string{"white_check_mark"})
		})
		if !slackReacted(f, "reactions.add", "C1", ts, "eyes") || !slackReacted(f, "reactions.remove", "C1", ts, "eyes") {
			t.Errorf("no 👀 on the user's message during the turn: %+v", f.Calls("reactions.add"))
		}
		if n := slackPostsIn(f, ts, "echo:"); n != 1 {
			t.Errorf("%d replies in the thread, want 1 (the app_mention twin runs no second turn)", n)
		}
	})

	t.Run("a permission button reaches the session and the progress message is edited", func(t *testing.T) {
		const ts = "1700000002.000100"
		f.Deliver(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> tidy up [[TOOL:echo one]] [[TOOL:rm -rf build]]", nil))
		progress := f.WaitPost(t, "the progress message", func(m fakeslack.Message) bool {
			return m.ThreadTS == ts && strings.Contains(m.Text, "echo one")
		})
		prompt := f.WaitPost(t, "the permission prompt", func(m fakeslack.Message) bool {
			return m.ThreadTS == ts && len(m.Buttons()) > 0
		})
		// The second tool call edits the progress message in place.
		f.WaitMessage(t, "C1", progress.TS, "edited to the second tool", func(m fakeslack.Message) bool {
			return len(m.Edits) > 0 && strings.Contains(m.Text, "rm -rf build")
		})
		var allow string
		for _, b := range prompt.Buttons() {
			if isAllow(b.Text) {
				allow = b.ActionID
			}
		}
		if allow == "" {
			t.Fatalf("no Allow button on the prompt: %+v", prompt.Buttons())
		}
		f.WaitAck(t, f.Press(t, prompt, allow, "U1"))
		f.WaitMessage(t, "C1", prompt.TS, "the outcome, without buttons", func(m fakeslack.Message) bool {
			return len(m.Buttons()) == 0 && strings.Contains(strings.ToLower(m.Blocks), "allowed")
		})
		reply := f.WaitPost(t, "the reply after the tool ran", func(m fakeslack.Message) bool {
			return m.ThreadTS == ts && strings.Contains(m.Text, "(fake) ran: rm -rf build")
		})
		if !ctxFigure.MatchString(reply.Text) {
			t.Errorf("reply %q does not end with the context figure", reply.Text)
		}
	})

	t.Run("an attachment is downloaded and named in the prompt", func(t *testing.T) {
		const ts = "1700000003.000100"
		file := f.AddFile("F1", "notes.txt", "text/plain", "the quarterly numbers\n")
		f.Deliver(t, fakeslack.MsgEvent("D1", ts, "U1", "summarize this", map[string]any{
			"channel_type": "im", "subtype": "file_share", "files": []any{file.Object()},
		}))
		f.WaitPost(t, "the reply in the DM", func(m fakeslack.Message) bool {
			return m.Channel == "D1" && strings.Contains(m.Text, "echo: summarize this")
		})
		r.attachmentPath(t, r.promptWith(t, "summarize this"), "notes.txt", "the quarterly numbers\n")
		if !slices.Contains(f.Downloads(), "Bearer "+fakeslack.BotToken) {
			t.Errorf("the file was not fetched with the bot token: %q", f.Downloads())
		}
	})

	t.Run("every copy of a message is acked only once it is journaled", func(t *testing.T) {
		const ts = "1700000004.000100"
		id := "C1:" + ts
		// What the journal held at the moment each ack arrived.
		var mu sync.Mutex
		atAck := map[string]bool{}
		var readErr error
		f.OnAck(func(envelopeID string) {
			in, err := r.journaled(id)
			mu.Lock()
			atAck[envelopeID] = in
			readErr = cmp.Or(readErr, err)
			mu.Unlock()
		})
		defer f.OnAck(nil)
		// Holding the 👀 reaction holds the turn, which would empty the
		// journal.
		releaseTurn := f.Hold("reactions.add")
		defer releaseTurn()
		// The message, its app_mention twin and Slack's retry of the
		// first, back to back: Slack retries no event it has an ack for,
		// so acking a copy before the message is on disk could lose it
		// with a crash.
		event := fakeslack.MsgEvent("C1", ts, "U2", "<@UBOT> journal me", nil)
		env, twin := f.DeliverMention(t, event)
		eventID := ""
		for _, d := range f.Deliveries() {
			if d.EnvelopeID == env {
				eventID = d.EventID
			}
		}
		const retry = "env-journal-me-retry"
		f.DeliverEnvelope(t, fakeslack.EventEnvelope(retry, eventID, 1, event))
		for _, e := range []string{env, twin, retry} {
			f.WaitAck(t, e)
		}
		mu.Lock()
		err := readErr
		for _, e := range []string{env, twin, retry} {
			if !atAck[e] {
				t.Errorf("when the ack of %s arrived the message was not in the journal", e)
			}
		}
		mu.Unlock()
		if err != nil {
			t.Fatalf("reading the journal at the ack: %v", err)
		}
		releaseTurn()
		f.WaitPost(t, "the reply", func(m fakeslack.Message) bool {
			return m.ThreadTS == ts && strings.Contains(m.Text, "message from Display U2 (") && strings.Contains(m.Text, "\njournal me")
		})
		if n := strings.Count(strings.Join(r.prompts(t), "\n"), "journal me"); n != 1 {
			t.Errorf("claude got the message %d times, want once", n)
		}
	})

	r.stop(t)
}

// slackReacted reports whether a reactions call named emoji on channel/ts
// succeeded.
func slackReacted(f *fakeslack.Server, method, channel, ts, emoji string) bool {
	for _, c := range f.Succeeded(method) {
		if c.Form["channel"] == channel && c.Form["timestamp"] == ts && c.Form["name"] == emoji {
			return true
		}
	}
	return false
}

// slackPostsIn counts the bot's posts in thread ts that contain text.
func slackPostsIn(f *fakeslack.Server, ts, text string) int {
	n := 0
	for _, m := range f.Posts() {
		if m.ThreadTS == ts && strings.Contains(m.Text, text) {
			n++
		}
	}
	return n
}
