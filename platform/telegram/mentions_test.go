package telegram

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// Texts Claude might write that Telegram would make into mentions.
var mentionAttempts = []string{
	"ask @alice or @bob_the_builder, @x",
	"[Alice](tg://user?id=123456) and [b](TG://user?id=1)",
	`<a href="tg://user?id=123456">raw html</a>`,
	"**@alice** _@bob_ ~~@carol~~ # @dave",
	"- @erin\n> @frank",
	"[@grace](https://t.me/grace)",
	"@@heidi (@ivan) \"@judy\"",
}

// Claude's replies notify nobody, as sent (HTML) and as sent again without
// formatting when Telegram refuses the HTML, and when edited; code stays as
// written, and an email address stays one.
func TestRepliesMentionNobody(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	// Edits of one message are paced; these need not be.
	a := newTestAdapter(t, f, func(c *Config) { c.EditInterval = time.Millisecond })
	runAdapter(t, a, platformtest.NewHandler())
	f.Next(t, "getUpdates")
	ctx := context.Background()
	to := platform.Target{Platform: "tg-test", Channel: "-1001"}
	sent := func(posted platform.Target) faketelegram.Message {
		t.Helper()
		m, ok := f.Message(forumChat.ID, atoi(t, posted.MessageID))
		if !ok {
			t.Fatalf("no message %s", posted.MessageID)
		}
		return m
	}
	edited, err := a.Send(ctx, to, "working…")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range mentionAttempts {
		posted, err := a.Send(ctx, to, text)
		if err != nil {
			t.Fatal(err)
		}
		if m := sent(posted); len(m.Mentions) > 0 || m.ParseMode != "HTML" {
			t.Errorf("Send(%q) notifies %q: %q (%s)", text, m.Mentions, m.Raw, m.ParseMode)
		}
		// Telegram refuses the formatting: the plain text goes out.
		f.Override("sendMessage", faketelegram.Answer{Status: 400, Body: `{"ok":false,"error_code":400,"description":"Bad Request: can't parse entities: x"}`})
		posted, err = a.Send(ctx, to, text)
		if err != nil {
			t.Fatal(err)
		}
		if m := sent(posted); m.ParseMode != "" || len(m.Mentions) > 0 {
			t.Errorf("plain Send(%q) notifies %q: %q (%q)", text, m.Mentions, m.Raw, m.ParseMode)
		}
		if err := a.Edit(ctx, edited, text); err != nil {
			t.Fatal(err)
		}
		if m := sent(edited); len(m.Edits) == 0 || len(m.Edits[len(m.Edits)-1].Mentions) > 0 {
			t.Errorf("Edit(%q) notifies: %+v", text, m.Edits)
		}
	}
	posted, err := a.Send(ctx, to, "mail a@b.co, see `@alice`\n```\nnpm i @types/node\n```")
	if err != nil {
		t.Fatal(err)
	}
	if want, got := "mail a@b.co, see @alice\nnpm i @types/node", sent(posted).Text; got != want {
		t.Errorf("shown %q, want %q: code and addresses unchanged", got, want)
	}
}

// FuzzToHTMLMentionsNobody: whatever Claude writes, Telegram accepts the
// HTML (the fake parses it as Telegram does) and it notifies nobody.
func FuzzToHTMLMentionsNobody(f *testing.F) {
	for _, s := range mentionAttempts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		html := toHTML(md)
		_, mentions, err := faketelegram.Parse(html, "HTML")
		if err != nil {
			t.Fatalf("toHTML(%q) = %q: Telegram refuses it: %v", md, html, err)
		}
		if len(mentions) > 0 {
			t.Fatalf("toHTML(%q) = %q notifies %q", md, html, mentions)
		}
		if _, mentions, _ := faketelegram.Parse(noMentions(md), ""); len(mentions) > 0 {
			t.Fatalf("noMentions(%q) notifies %q", md, mentions)
		}
		if strings.Contains(strings.ToLower(html), `<a href="tg:`) {
			t.Fatalf("toHTML(%q) = %q links to tg://", md, html)
		}
	})
}

// A mention cc-connect asks for notifies that user and nobody else; an id
// that is not a Telegram user's is refused.
func TestSendMentioning(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, platformtest.NewHandler())
	f.Next(t, "getUpdates")
	ctx := context.Background()
	to := platform.Target{Platform: "tg-test", Channel: "-1001"}
	posted, err := a.SendMentioning(ctx, to, []platform.Mention{{UserID: "42", UserName: "Ann <b>"}}, "done, ask @bob")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := f.Message(forumChat.ID, atoi(t, posted.MessageID))
	if len(m.Mentions) != 1 || m.Mentions[0] != "tg://user?id=42" || !strings.HasPrefix(m.Text, "Ann <b> done") {
		t.Errorf("shown %q, mentions %q: want only user 42", m.Text, m.Mentions)
	}
	for _, bad := range []string{"42\"><b", "@bob", ""} {
		if _, err := a.SendMentioning(ctx, to, []platform.Mention{{UserID: bad}}, "x"); err == nil {
			t.Errorf("SendMentioning accepted the user id %q", bad)
		}
	}
	if n := len(f.Sent()); n != 1 {
		t.Errorf("%d messages sent, want the refused ones not sent", n)
	}
}
