package discord

import (
	"context"
	"errors"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
)

// TestSendDirect: the link goes to the bot's DM channel with the user,
// opened through the API, without an embed (a preview would fetch a
// one-time link); a user who allows no direct message is ErrNoDirectChat.
func TestSendDirect(t *testing.T) {
	t.Parallel()
	f := fakediscord.New(t)
	a := newTestAdapter(t, f, nil)
	ctx := context.Background()
	to, err := a.SendDirect(ctx, "4242", "your link: https://cc.example/signin?t=x")
	if err != nil {
		t.Fatal(err)
	}
	if to.Channel != fakediscord.DMChannel("4242") || to.MessageID == "" {
		t.Errorf("SendDirect = %+v, want a message in the DM channel", to)
	}
	open := f.Next(t, "POST", "/users/@me/channels")
	if open.Body["recipient_id"] != "4242" {
		t.Errorf("opened a DM with %v", open.Body)
	}
	post := f.Next(t, "POST", "/channels/"+fakediscord.DMChannel("4242")+"/messages")
	if flags, _ := post.Body["flags"].(float64); int(flags)&4 == 0 {
		t.Errorf("the DM does not suppress embeds: %v", post.Body)
	}
	f.WaitPost(t, "the link in the DM", func(m fakediscord.Message) bool {
		return m.ChannelID == fakediscord.DMChannel("4242") && m.Content == "your link: https://cc.example/signin?t=x"
	})

	f.RefuseDMs("4343")
	if _, err := a.SendDirect(ctx, "4343", "x"); !errors.Is(err, platform.ErrNoDirectChat) {
		t.Errorf("a user refusing DMs: %v, want ErrNoDirectChat", err)
	}
	if _, err := a.SendDirect(ctx, "<@4242>", "x"); err == nil {
		t.Error("SendDirect took a mention for a user id")
	}
}
