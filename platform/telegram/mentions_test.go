package telegram

import (
	"context"
	"strings"
	"testing"
	"time"

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
	f := newFakeAPI(t)
	// Edits of one message are paced; these need not be.
	a := newTestAdapter(t, f, func(c *Config) { c.EditInterval = time.Millisecond })
	runAdapter(t, a, platformtest.NewHandler())
	f.next("getUpdates")
	ctx := context.Background()
	to := platform.Target{Platform: "tg-test", Channel: "-1001"}
	for _, text := range mentionAttempts {
		if _, err := a.Send(ctx, to, text); err != nil {
			t.Fatal(err)
		}
		if c := f.next("sendMessage"); len(c.Mentions) > 0 {
			t.Errorf("Send(%q) notifies %q: %q", text, c.Mentions, c.Form.Get("text"))
		}
		// Telegram refuses the formatting: the plain text goes out.
		f.override("sendMessage", 400, `{"ok":false,"error_code":400,"description":"Bad Request: can't parse entities: x"}`)
		if _, err := a.Send(ctx, to, text); err != nil {
			t.Fatal(err)
		}
		f.next("sendMessage")
		if c := f.next("sendMessage"); c.Form.Get("parse_mode") != "" || len(c.Mentions) > 0 {
			t.Errorf("plain Send(%q) notifies %q: %q", text, c.Mentions, c.Form.Get("text"))
		}
		if err := a.Edit(ctx, platform.Target{Channel: "-1001", MessageID: "101"}, text); err != nil {
			t.Fatal(err)
		}
		if c := f.next("editMessageText"); len(c.Mentions) > 0 {
			t.Errorf("Edit(%q) notifies %q", text, c.Mentions)
		}
	}
	if _, err := a.Send(ctx, to, "mail a@b.co, see `@alice`\n```\nnpm i @types/node\n```"); err != nil {
		t.Fatal(err)
	}
	c := f.next("sendMessage")
	if want := "mail a@b.co, see @alice\nnpm i @types/node"; c.Text != want {
		t.Errorf("shown %q, want %q: code and addresses unchanged", c.Text, want)
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
		shown, mentions, problem := parseMessage(html, "HTML")
		if problem != "" && problem != "message is too long" {
			t.Fatalf("toHTML(%q) = %q: Telegram refuses it: %s", md, html, problem)
		}
		if len(mentions) > 0 {
			t.Fatalf("toHTML(%q) = %q notifies %q", md, html, mentions)
		}
		if _, mentions, _ := parseMessage(noMentions(md), ""); len(mentions) > 0 {
			t.Fatalf("noMentions(%q) notifies %q", md, mentions)
		}
		_ = shown
		if strings.Contains(strings.ToLower(html), `<a href="tg:`) {
			t.Fatalf("toHTML(%q) = %q links to tg://", md, html)
		}
	})
}

// A mention cc-connect asks for notifies that user and nobody else; an id
// that is not a Telegram user's is refused.
func TestSendMentioning(t *testing.T) {
	f := newFakeAPI(t)
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, platformtest.NewHandler())
	f.next("getUpdates")
	ctx := context.Background()
	to := platform.Target{Platform: "tg-test", Channel: "-1001"}
	if _, err := a.SendMentioning(ctx, to, []platform.Mention{{UserID: "42", UserName: "Ann <b>"}}, "done, ask @bob"); err != nil {
		t.Fatal(err)
	}
	c := f.next("sendMessage")
	if len(c.Mentions) != 1 || c.Mentions[0] != "tg://user?id=42" || !strings.HasPrefix(c.Text, "Ann <b> done") {
		t.Errorf("shown %q, mentions %q: want only user 42", c.Text, c.Mentions)
	}
	for _, bad := range []string{"42\"><b", "@bob", ""} {
		if _, err := a.SendMentioning(ctx, to, []platform.Mention{{UserID: bad}}, "x"); err == nil {
			t.Errorf("SendMentioning accepted the user id %q", bad)
		}
	}
}
