package telegram

import (
	"context"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
)

// TestSendFitsTelegramsCount: Telegram counts the text after entity
// parsing, in UTF-16 units, and refuses broken HTML; the fake enforces both
// with its own numbers, so every part of a reply full of escapes, emoji
// and code must be accepted as sent, in HTML.
func TestSendFitsTelegramsCount(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	text := strings.Repeat("a < b && ", 1200) + "\n" + strings.Repeat("😀", 3000) + "\n```go\n" + strings.Repeat("if a < b { return \"&\" }\n", 400) + "```\nend"
	if _, err := a.Send(context.Background(), platform.Target{Channel: "42"}, text); err != nil {
		t.Fatalf("Send = %v", err)
	}
	sent := f.Sent()
	if len(sent) < 3 {
		t.Fatalf("%d parts", len(sent))
	}
	var all strings.Builder
	for i, m := range sent {
		if m.ParseMode != "HTML" {
			t.Errorf("part %d fell back to plain text", i)
		}
		all.WriteString(m.Text)
	}
	// Parts are cut at white space, which may go; the rest is all there.
	got := strings.Join(strings.Fields(all.String()), "")
	if strings.Count(got, "😀") != 3000 || strings.Count(got, "a<b&&") != 1200 || strings.Count(got, `return"&"`) != 400 || !strings.HasSuffix(got, "end") {
		t.Errorf("the parts do not add up to the reply")
	}
	if n := len(f.Calls("sendMessage")); n != len(sent) {
		t.Errorf("%d sendMessage calls for %d parts: some were refused", n, len(sent))
	}
}
