package discord

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// longReply is Markdown that splits into three Discord messages.
func longReply() string {
	var b strings.Builder
	for i := range 3 {
		fmt.Fprintf(&b, "Section %d\n\n%s\n\n", i, strings.Repeat("word ", splitLimit/5-10))
	}
	return b.String()
}

// TestSendReplyNonces: each part goes with its own nonce (at most 25
// characters, however long the key) and enforce_nonce; posting the reply
// again, as after a restart, creates no message within Discord's window
// and posts again only once the window passed, which the fake's clock
// shows. Done parts are not sent at all.
func TestSendReplyNonces(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	runConnected(t, f, a, platformtest.NewHandler())
	ctx := context.Background()
	to := platform.Target{Platform: "dc-test", Channel: "C1", MessageID: "1"}
	key := strings.Repeat("turn-7f3a9c2e-", 4)

	var landed []string
	res, err := a.SendReply(ctx, to, longReply(), platform.Reply{Key: key, After: "1",
		Landed: func(part, parts int) { landed = append(landed, fmt.Sprintf("%d/%d", part, parts)) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Parts != 3 || res.Posted != 3 || strings.Join(landed, " ") != "0/3 1/3 2/3" {
		t.Fatalf("result %+v, landed %q", res, landed)
	}
	posts := f.Posts()
	if len(posts) != 3 || res.Last.MessageID != posts[2].ID {
		t.Fatalf("%d posts, last %+v", len(posts), res.Last)
	}
	nonces := map[string]bool{}
	for _, p := range posts {
		if len(p.Nonce) == 0 || len(p.Nonce) > 25 || nonces[p.Nonce] {
			t.Errorf("part %q has nonce %q: want a distinct one of at most 25 characters", p.Content[:12], p.Nonce)
		}
		nonces[p.Nonce] = true
	}
	for _, c := range f.Calls() {
		if c.Method == "POST" && c.Path == "/channels/C1/messages" && c.Body["enforce_nonce"] != true {
			t.Errorf("a part was posted without enforce_nonce: %v", c.Body)
		}
	}

	// The restart: the same reply again, one part named done.
	res, err = a.SendReply(ctx, to, longReply(), platform.Reply{Key: key, After: "1", Again: true,
		Done: func(part int) bool { return part == 0 }})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.Posts()); n != 3 || res.Last.MessageID != posts[2].ID {
		t.Fatalf("after posting again: %d posts (want 3), last %+v", n, res.Last)
	}
	// Another reply's parts are its own.
	if _, err := a.SendReply(ctx, to, "another answer", platform.Reply{Key: "turn-2"}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Posts()); n != 4 {
		t.Fatalf("another reply: %d posts, want 4", n)
	}
	// Past Discord's window a nonce no longer matches: posted again.
	f.AdvanceClock(10 * time.Minute)
	if _, err := a.SendReply(ctx, to, "another answer", platform.Reply{Key: "turn-2"}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Posts()); n != 5 {
		t.Fatalf("past the window: %d posts, want 5", n)
	}
}

// TestSendReplyRefusesEmptyText: nothing to post is an error, as for Send.
func TestSendReplyRefusesEmptyText(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	runConnected(t, f, a, platformtest.NewHandler())
	if _, err := a.SendReply(context.Background(), platform.Target{Channel: "C1"}, " \n", platform.Reply{Key: "k"}); err == nil {
		t.Fatal("an empty reply was accepted")
	}
	if n := len(f.Posts()); n != 0 {
		t.Errorf("%d posts", n)
	}
}
