package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
)

// TestDiscordThroughTheBinary runs cc-connect with a Discord platform
// whose api_url is the fake Discord (REST, and the gateway it names), the
// fake claude behind the engine, one thread per conversation.
func TestDiscordThroughTheBinary(t *testing.T) {
	t.Parallel()
	f := fakediscord.New(t)
	f.AddChannel(fakediscord.Channel{ID: "C1", Type: 0, GuildID: "G1", Name: "dev"})
	r := startChat(t, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "discord"
token = "${DISCORD_BOT_TOKEN}"
api_url = %q
thread_per_message = true
`, f.URL()), `"7"`, "DISCORD_BOT_TOKEN="+fakediscord.Token)
	f.WaitConnected(t, 1)
	bot := map[string]any{"id": fakediscord.BotID, "username": fakediscord.BotName, "bot": true}
	mention := func(id, text string) map[string]any {
		return fakediscord.MessageEvent(id, "C1", "G1", "7", "<@"+fakediscord.BotID+"> "+text, map[string]any{"mentions": []any{bot}})
	}

	t.Run("a mention gets one threaded reply with the context figure", func(t *testing.T) {
		f.Post(t, mention("1001", "hello there"))
		reply := f.WaitPost(t, "the reply in the message's thread", func(m fakediscord.Message) bool {
			return m.ChannelID == "1001" && strings.Contains(m.Content, "message from") && strings.Contains(m.Content, "\nhello there")
		})
		if !ctxFigure.MatchString(reply.Content) {
			t.Errorf("reply %q does not end with the context figure", reply.Content)
		}
		// 👀 while the turn ran, ✅ after, on the user's message.
		f.WaitMessage(t, "1001", "✅ when the turn is done", func(m fakediscord.Message) bool {
			return slices.Equal(m.Reactions, []string{"✅"})
		})
		var eyes, uneyes bool
		for _, c := range f.Calls() {
			if c.Path == "/channels/C1/messages/1001/reactions/👀/@me" && c.Status == 204 {
				eyes = eyes || c.Method == "PUT"
				uneyes = uneyes || c.Method == "DELETE"
			}
		}
		if !eyes || !uneyes {
			t.Errorf("no 👀 on the user's message during the turn (put %v, delete %v)", eyes, uneyes)
		}
		n := 0
		for _, m := range f.Posts() {
			if strings.Contains(m.Content, "message from") && strings.Contains(m.Content, "\nhello there") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d replies, want 1", n)
		}
	})

	t.Run("a permission button reaches the session and the progress message is edited", func(t *testing.T) {
		f.Post(t, mention("1002", "tidy up [[TOOL:echo one]] [[TOOL:rm -rf build]]"))
		progress := f.WaitPost(t, "the progress message", func(m fakediscord.Message) bool {
			return m.ChannelID == "1002" && strings.Contains(m.Content, "echo one")
		})
		prompt := f.WaitPost(t, "the permission prompt", func(m fakediscord.Message) bool {
			return m.ChannelID == "1002" && len(m.Buttons()) > 0
		})
		f.WaitMessage(t, progress.ID, "edited to the second tool", func(m fakediscord.Message) bool {
			return len(m.Edits) > 0 && strings.Contains(m.Content, "rm -rf build")
		})
		var allow string
		for _, b := range prompt.Buttons() {
			if isAllow(b.Label) {
				allow = b.CustomID
			}
		}
		if allow == "" {
			t.Fatalf("no Allow button on the prompt: %+v", prompt.Buttons())
		}
		click := f.Click(t, prompt, allow, "7", "alice")
		f.Wait(t, "the click answered", func() bool { _, ok := f.InteractionAnswer(click); return ok })
		f.WaitMessage(t, prompt.ID, "the outcome, without buttons", func(m fakediscord.Message) bool {
			return len(m.Buttons()) == 0 && strings.Contains(strings.ToLower(m.Content), "allowed")
		})
		reply := f.WaitPost(t, "the reply after the tool ran", func(m fakediscord.Message) bool {
			return m.ChannelID == "1002" && strings.Contains(m.Content, "(fake) ran: rm -rf build")
		})
		if !ctxFigure.MatchString(reply.Content) {
			t.Errorf("reply %q does not end with the context figure", reply.Content)
		}
	})

	t.Run("an attachment is downloaded and named in the prompt", func(t *testing.T) {
		file := f.AddFile("att1", "notes.txt", "text/plain", "the quarterly numbers\n")
		f.Post(t, fakediscord.MessageEvent("1003", "D1", "", "7", "summarize this", map[string]any{"attachments": []any{file}}))
		f.WaitPost(t, "the reply in the DM", func(m fakediscord.Message) bool {
			return m.ChannelID == "D1" && strings.Contains(m.Content, "echo: summarize this")
		})
		r.attachmentPath(t, r.promptWith(t, "summarize this"), "notes.txt", "the quarterly numbers\n")
	})

	r.stop(t)
}
