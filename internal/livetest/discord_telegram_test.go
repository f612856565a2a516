package livetest

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform/discord"
	"github.com/cc-connect/cc-connect/platform/telegram"
)

func startDiscord(t testing.TB, o options) (*setup, *fakediscord.Server) {
	t.Helper()
	f := fakediscord.New(t)
	f.SetWaitLimit(waitLimit)
	f.AddChannel(fakediscord.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	// Discord's bucket for edits in a channel.
	f.SetEditLimit(5, 5*time.Second)
	a, err := discord.New(discord.Config{Name: "discord", Token: fakediscord.Token, APIURL: f.URL(), EditInterval: 200 * time.Millisecond},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, a, o)
	f.WaitConnected(t, 1)
	return s, f
}

func streamed(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(fakeapi.StreamChunk(i, n))
	}
	return strings.TrimSpace(b.String())
}

// Discord: the reply streams into one message within the channel's edit
// bucket and ends as exactly the reply; a question's press answers it.
func TestRealCLIDiscordStreamAndQuestion(t *testing.T) {
	s, f := startDiscord(t, options{})
	f.Post(t, fakediscord.MessageEvent("100", "C1", "G1", "7", "tell me slowly [[STREAM:6:3s]]", nil))
	first := f.WaitPost(t, "the first chunk, before the answer is done", func(m fakediscord.Message) bool {
		return strings.Contains(m.Content, "chunk 1 of 6") && !strings.Contains(m.Content, "chunk 6 of 6")
	})
	final := f.WaitMessage(t, first.ID, "the final text", func(m fakediscord.Message) bool { return ctxLine.MatchString(m.Content) })
	if got := ctxLine.ReplaceAllString(final.Content, ""); got != streamed(6) {
		t.Errorf("final text %q, want exactly the reply", got)
	}
	if len(final.Edits) < 2 {
		t.Errorf("%d edits: the reply was not shown as it was written", len(final.Edits))
	}

	f.Post(t, fakediscord.MessageEvent("101", "C1", "G1", "7", "pick one [[ASK]]", nil))
	prompt := f.WaitPost(t, "the question", func(m fakediscord.Message) bool {
		return strings.Contains(m.Content, "Which color should the button be?") && len(m.Buttons()) > 0
	})
	var blue string
	for _, b := range prompt.Buttons() {
		if b.Label == "Blue" {
			blue = b.CustomID
		}
	}
	if blue == "" {
		t.Fatalf("no Blue button: %+v", prompt.Buttons())
	}
	f.Click(t, prompt, blue, "7", "ann")
	f.WaitPost(t, "the reply after the answer", func(m fakediscord.Message) bool {
		return strings.Contains(m.Content, "tool said:") && ctxLine.MatchString(m.Content)
	})
	if !toolResultHas(s.api, `"Which color should the button be?"="Blue"`) {
		t.Errorf("the model did not get the answer: %q", toolResults(s.api))
	}
	f.WaitMessage(t, prompt.ID, "who answered, without buttons", func(m fakediscord.Message) bool {
		return len(m.Buttons()) == 0 && strings.Contains(m.Content, "Answered by ann")
	})
}

// Telegram: the same in a private chat held to one edit a second.
func TestRealCLITelegramStreamAndQuestion(t *testing.T) {
	f := faketelegram.New(t)
	f.SetWaitLimit(waitLimit)
	f.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	f.SetEditLimit(time.Second, 3*time.Second)
	a, err := telegram.New(telegram.Config{Name: "telegram", Token: faketelegram.Token, APIURL: f.URL(), PollTimeout: time.Second},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, a, options{})
	user := faketelegram.User(42, "ann", false)
	chat := map[string]any{"id": 42, "type": "private"}
	f.Send(map[string]any{"chat": chat, "from": user, "text": "tell me slowly [[STREAM:6:3s]]"})
	first := f.WaitSent(t, "the first chunk, before the answer is done", func(m faketelegram.Message) bool {
		return strings.Contains(m.Text, "chunk 1 of 6") && !strings.Contains(m.Text, "chunk 6 of 6")
	})
	final := f.WaitMessage(t, 42, first.MessageID, "the final text", func(m faketelegram.Message) bool { return ctxLine.MatchString(m.Text) })
	if got := ctxLine.ReplaceAllString(final.Text, ""); got != streamed(6) {
		t.Errorf("final text %q, want exactly the reply", got)
	}
	if len(final.Edits) < 2 {
		t.Errorf("%d edits: the reply was not shown as it was written", len(final.Edits))
	}

	f.Send(map[string]any{"chat": chat, "from": user, "text": "pick one [[ASK]]"})
	prompt := f.WaitSent(t, "the question", func(m faketelegram.Message) bool {
		return strings.Contains(m.Text, "Which color should the button be?") && len(m.Buttons()) > 0
	})
	f.Press(t, prompt, "Blue", user)
	f.WaitSent(t, "the reply after the answer", func(m faketelegram.Message) bool {
		return strings.Contains(m.Text, "tool said:") && ctxLine.MatchString(m.Text)
	})
	if !toolResultHas(s.api, `"Which color should the button be?"="Blue"`) {
		t.Errorf("the model did not get the answer: %q", toolResults(s.api))
	}
	f.WaitMessage(t, 42, prompt.MessageID, "who answered, without buttons", func(m faketelegram.Message) bool {
		return len(m.Buttons()) == 0 && strings.Contains(m.Text, "Answered by ann")
	})
}
