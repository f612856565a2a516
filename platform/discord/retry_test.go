package discord

import (
	"context"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
)

// TestServerErrorsRetriedOnlyWhenSafe: a 5xx is retried for a call that
// may be repeated (an edit), never for a post (it may have posted), and a
// 502, which discordgo retries itself, is not retried a second time.
func TestServerErrorsRetriedOnlyWhenSafe(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	ctx := context.Background()
	msg, err := a.Send(ctx, platform.Target{Channel: "C1"}, "first")
	if err != nil {
		t.Fatal(err)
	}
	edit := "PATCH /channels/C1/messages/" + msg.MessageID
	count := func(key string) (n int) {
		for _, c := range f.Calls() {
			if c.Method+" "+c.Path == key {
				n++
			}
		}
		return n
	}

	down := fakediscord.Answer{Status: 503, Body: `{"message":"upstream down","code":0}`}
	f.Override(edit, down)
	f.Override(edit, down)
	if err := a.Edit(ctx, msg, "edited"); err != nil {
		t.Fatalf("Edit through two 503s = %v", err)
	}
	if n := count(edit); n != 3 {
		t.Errorf("%d edit calls, want 3 (two 503s, then the edit)", n)
	}
	if m, _ := f.Message(msg.MessageID); m.Content != "edited" {
		t.Errorf("message shows %q", m.Content)
	}

	post := "POST /channels/C1/messages"
	before := count(post)
	f.Override(post, down)
	if _, err := a.Send(ctx, platform.Target{Channel: "C1"}, "second"); err == nil {
		t.Error("Send during a 503 succeeded")
	}
	if n := count(post) - before; n != 1 {
		t.Errorf("%d post calls for a post that met a 503, want 1", n)
	}

	bad := fakediscord.Answer{Status: 502, Body: `bad gateway`}
	for range a.wire.session.MaxRestRetries + 1 {
		f.Override(edit, bad)
	}
	before = count(edit)
	if err := a.Edit(ctx, msg, "again"); err == nil {
		t.Error("Edit through 502s past discordgo's retries succeeded")
	}
	if n, want := count(edit)-before, a.wire.session.MaxRestRetries+1; n != want {
		t.Errorf("%d edit calls for 502s, want %d (discordgo's own retries only)", n, want)
	}
}
