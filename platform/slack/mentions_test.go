package slack

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/platform"
)

// Texts Claude might write that Slack would turn into mentions or channel
// links if they reached it as control sequences.
var pingAttempts = []string{
	"[x](!channel) and [y](!here) and [z](!everyone)",
	"[x](@U0123) [y](@W0123|name)",
	"[team](!subteam^S0123) [c](#C0123)",
	"[x](<!channel>) [](!here)",
	"<!channel> <@U0123> <#C0123|general> <!subteam^S1|@team> <!date^1392734382^{date}|x>",
	"&lt;!channel&gt; already escaped",
	"@channel @here @everyone @alice",
	"| a | b |\n|---|---|\n| <!here> | [x](!channel) |",
	"`<!channel>` and ```\n<@U0123>\n```",
	"# <!everyone> heading\n> <!here> quote\n- [x](@U1) item",
	"[x](https://e.com/<!channel>) [y](https://e.com/a|<!here>)",
	"<mailto:a@b.c|<!channel>>",
	"private use \U000F0000 \U000FFFFD [x](https://e.com)",
}

// Claude's replies, whatever they say, make no mention, no group mention
// and no channel link, posted or edited through slack-go to the fake.
func TestRepliesPingNobody(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	to := platform.Target{Platform: "slack-test", Channel: "C1", Thread: "1700000500.000100"}
	for _, text := range pingAttempts {
		posted, err := e.a.Send(ctx, to, text)
		if err != nil {
			t.Fatalf("Send(%q): %v", text, err)
		}
		if err := e.a.Edit(ctx, posted, text); err != nil {
			t.Fatalf("Edit(%q): %v", text, err)
		}
	}
	for _, method := range []string{"chat.postMessage", "chat.update"} {
		calls := e.f.Calls(method)
		if len(calls) != len(pingAttempts) {
			t.Fatalf("%d %s calls, want %d", len(calls), method, len(pingAttempts))
		}
		for i, c := range calls {
			if len(c.Pings) > 0 || c.Form["link_names"] != "false" {
				t.Errorf("%s of %q: Slack would act on %q (link_names %q); text %q", method, pingAttempts[i], c.Pings, c.Form["link_names"], c.Form["text"])
			}
		}
	}
}

func TestLinksToNonAddressesStayText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"[x](!channel)", "x (!channel)"},
		{"[x](@U0123)", "x (@U0123)"},
		{"[](!here)", "!here"},
		{"[#general](#C0123)", "#general (#C0123)"},
		{"[x](javascript:alert(1))", "x (javascript:alert(1))"},
		{"[a & b](!here)", "a &amp; b (!here)"},
		{"[docs](https://x.io)", "<https://x.io|docs>"},
		{"[mail](mailto:a@b.c)", "<mailto:a@b.c|mail>"},
		{"[](https://)", "https://"},
	}
	for _, tt := range tests {
		if got := ToMrkdwn(tt.in); got != tt.want {
			t.Errorf("ToMrkdwn(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// safeLinkRE is the only shape a "<" may start in converted text: a link
// to a web, mail or FTP address, with an optional label.
var safeLinkRE = regexp.MustCompile(`^<(?:https?://|mailto:|ftp://)[^<>|\s]+(?:\|[^<>]*)?>`)

// FuzzToMrkdwnNoControlSequences: whatever Claude writes, the mrkdwn holds
// no control sequence (<!…>, <@…>, <#…>), every "<" starts a link to an
// address, and none of the placeholders conversion uses is left.
func FuzzToMrkdwnNoControlSequences(f *testing.F) {
	for _, s := range pingAttempts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := ToMrkdwn(md)
		for i := 0; i < len(out); i++ {
			if out[i] == '<' && !safeLinkRE.MatchString(out[i:]) {
				t.Fatalf("ToMrkdwn(%q) = %q: a %q that is not a link to an address", md, out, out[i:min(len(out), i+20)])
			}
		}
		for _, r := range out {
			if r >= placeholderBase && r <= 0xFFFFD {
				t.Fatalf("ToMrkdwn(%q) = %q: a placeholder %U is left", md, out, r)
			}
		}
		if strings.Contains(out, "<!") || strings.Contains(out, "<@") || strings.Contains(out, "<#") {
			t.Fatalf("ToMrkdwn(%q) = %q: a control sequence", md, out)
		}
	})
}

// A mention cc-connect asks for notifies that user and nobody else, however
// the text goes on; an id that is not a Slack user's is refused.
func TestSendMentioning(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	to := platform.Target{Platform: "slack-test", Channel: "C1", Thread: "1700000500.000100"}
	if _, err := e.a.SendMentioning(ctx, to, []platform.Mention{{UserID: "U0ASKER", UserName: "ann"}}, "done: [x](!channel) <@U0OTHER>"); err != nil {
		t.Fatal(err)
	}
	c := e.f.Calls("chat.postMessage")[0]
	if len(c.Pings) != 1 || c.Pings[0] != "<@U0ASKER>" || !strings.HasPrefix(c.Form["text"], "<@U0ASKER> done:") {
		t.Errorf("pings %q in %q, want only the asker's mention", c.Pings, c.Form["text"])
	}
	for _, bad := range []string{"!channel", "U1> <!here", "", "u0lower"} {
		if _, err := e.a.SendMentioning(ctx, to, []platform.Mention{{UserID: bad}}, "x"); err == nil {
			t.Errorf("SendMentioning accepted the user id %q", bad)
		}
	}
	if n := len(e.f.Calls("chat.postMessage")); n != 1 {
		t.Errorf("%d messages posted, want the refused ones not posted", n)
	}
}
