package telegram

import (
	"context"
	"errors"
	"testing"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
)

// TestSendDirect: a person who started the bot gets the text in their
// private chat, without a link preview; one the bot knows only from a
// group gets nothing, and the error says why (ErrNoDirectChat).
func TestSendDirect(t *testing.T) {
	t.Parallel()
	f := faketelegram.New(t)
	a := newTestAdapter(t, f, nil)
	ctx := context.Background()
	// 7 wrote to the bot in private; 8 only in a group.
	f.Send(map[string]any{"chat": map[string]any{"id": 7, "type": "private"}, "from": user(7, "alice", false), "text": "/start"})
	f.Send(map[string]any{"chat": map[string]any{"id": -100, "type": "group"}, "from": user(8, "bob", false), "text": "hi"})

	to, err := a.SendDirect(ctx, "7", "your link: https://cc.example/signin?t=x")
	if err != nil {
		t.Fatal(err)
	}
	if to.Channel != "7" || to.MessageID == "" {
		t.Errorf("SendDirect = %+v, want a message in the private chat 7", to)
	}
	m := f.WaitSent(t, "the link", func(m faketelegram.Message) bool { return m.ChatID == 7 })
	if m.Text != "your link: https://cc.example/signin?t=x" {
		t.Errorf("sent %q", m.Text)
	}
	if _, err := a.SendDirect(ctx, "8", "x"); !errors.Is(err, platform.ErrNoDirectChat) {
		t.Errorf("to a person who never started the bot: %v, want ErrNoDirectChat", err)
	}
	if _, err := a.SendDirect(ctx, "-100", "x"); err == nil {
		t.Error("SendDirect wrote to a group")
	}
	for _, c := range f.Calls("sendMessage") {
		if c.Form.Get("disable_web_page_preview") != "true" {
			t.Errorf("a direct message with a link preview: %v", c)
		}
	}
}
