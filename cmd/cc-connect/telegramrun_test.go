package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
)

// TestTelegramThroughTheBinary runs cc-connect with a Telegram platform
// whose api_url is the fake Bot API, the fake claude behind the engine; the
// group is a forum, so each topic is a conversation.
func TestTelegramThroughTheBinary(t *testing.T) {
	t.Parallel()
	f := faketelegram.New(t)
	r := startChat(t, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
`, f.URL()), `"7"`, "TELEGRAM_BOT_TOKEN="+faketelegram.Token)
	f.Wait(t, "the first poll", func() bool { return len(f.Calls("getUpdates")) > 0 })
	alice := faketelegram.User(7, "alice", false)
	const forumID = -1001
	mention := func(topic int, text string) int {
		return f.Send(map[string]any{
			"chat": map[string]any{"id": forumID, "type": "supergroup", "is_forum": true, "title": "dev"},
			"from": alice, "text": "@" + faketelegram.BotUsername + " " + text,
			"entities":          []any{map[string]any{"type": "mention", "offset": 0, "length": 1 + len(faketelegram.BotUsername)}},
			"message_thread_id": topic, "is_topic_message": true,
		})
	}

	t.Run("a mention gets one reply in the topic with the context figure", func(t *testing.T) {
		id := mention(77, "hello there")
		reply := f.WaitSent(t, "the reply in the topic", func(m faketelegram.Message) bool {
			return m.ChatID == forumID && m.ThreadID == 77 && strings.Contains(m.Text, "message from") && strings.Contains(m.Text, "\nhello there")
		})
		if !ctxFigure.MatchString(reply.Text) {
			t.Errorf("reply %q does not end with the context figure", reply.Text)
		}
		// 👀 while the turn ran, then 👍 (Telegram has no ✅ reaction),
		// on the user's message.
		f.WaitMessage(t, forumID, id, "👍 when the turn is done", func(m faketelegram.Message) bool {
			return slices.Equal(m.Reactions, []string{"👍"})
		})
		eyes := false
		for _, c := range f.Calls("setMessageReaction") {
			eyes = eyes || (c.Form.Get("message_id") == strconv.Itoa(id) && strings.Contains(c.Form.Get("reaction"), "👀"))
		}
		if !eyes {
			t.Error("no 👀 on the user's message during the turn")
		}
		n := 0
		for _, m := range f.Sent() {
			if strings.Contains(m.Text, "message from") && strings.Contains(m.Text, "\nhello there") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d replies, want 1", n)
		}
	})

	t.Run("a permission button reaches the session and the progress message is edited", func(t *testing.T) {
		mention(78, "tidy up [[TOOL:echo one]] [[TOOL:rm -rf build]]")
		inTopic := func(m faketelegram.Message) bool { return m.ChatID == forumID && m.ThreadID == 78 }
		progress := f.WaitSent(t, "the progress message", func(m faketelegram.Message) bool {
			return inTopic(m) && strings.Contains(m.Text, "echo one")
		})
		prompt := f.WaitSent(t, "the permission prompt", func(m faketelegram.Message) bool {
			return inTopic(m) && len(m.Buttons()) > 0
		})
		f.WaitMessage(t, forumID, progress.MessageID, "edited to the second tool", func(m faketelegram.Message) bool {
			return len(m.Edits) > 0 && strings.Contains(m.Text, "rm -rf build")
		})
		var allow string
		for _, b := range prompt.Buttons() {
			if isAllow(b.Text) {
				allow = b.Text
			}
		}
		if allow == "" {
			t.Fatalf("no Allow button on the prompt: %+v", prompt.Buttons())
		}
		q := f.Press(t, prompt, allow, alice)
		f.Wait(t, "the button press answered", func() bool { return f.Answered(q) })
		f.WaitMessage(t, forumID, prompt.MessageID, "the outcome, without buttons", func(m faketelegram.Message) bool {
			return len(m.Buttons()) == 0 && strings.Contains(strings.ToLower(m.Text), "allowed")
		})
		reply := f.WaitSent(t, "the reply after the tool ran", func(m faketelegram.Message) bool {
			return inTopic(m) && strings.Contains(m.Text, "(fake) ran: rm -rf build")
		})
		if !ctxFigure.MatchString(reply.Text) {
			t.Errorf("reply %q does not end with the context figure", reply.Text)
		}
	})

	t.Run("an attachment is downloaded and named in the prompt", func(t *testing.T) {
		f.AddFile("F1", "documents/file_1.txt", "the quarterly numbers\n")
		f.Send(map[string]any{
			"chat": map[string]any{"id": 42, "type": "private"}, "from": alice, "caption": "summarize this",
			"document": map[string]any{"file_id": "F1", "file_unique_id": "uF1", "file_name": "notes.txt", "mime_type": "text/plain", "file_size": 22},
		})
		f.WaitSent(t, "the reply in the private chat", func(m faketelegram.Message) bool {
			return m.ChatID == 42 && strings.Contains(m.Text, "echo: summarize this")
		})
		r.attachmentPath(t, r.promptWith(t, "summarize this"), "notes.txt", "the quarterly numbers\n")
	})

	r.stop(t)
}
