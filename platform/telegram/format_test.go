package telegram

import (
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

func TestToHTML(t *testing.T) {
	tests := []struct {
		name, md, want string
	}{
		{"escape", "a < b & c > d", "a &lt; b &amp; c &gt; d"},
		{"bold italic", "**bold** and *it* and _it2_", "<b>bold</b> and <i>it</i> and <i>it2</i>"},
		{"snake case stays", "call my_func_name now", "call my_func_name now"},
		{"lone star stays", "2 * 3 * 4", "2 * 3 * 4"},
		{"unclosed bold stays", "**open", "**open"},
		{"inline code", "run `go test <pkg>` now", "run <code>go test &lt;pkg&gt;</code> now"},
		{"code beats emphasis", "`a*b*c`", "<code>a*b*c</code>"},
		{"strike", "~~gone~~", "<s>gone</s>"},
		{"link", "[docs](https://x.dev/a?b=1&c=2)", `<a href="https://x.dev/a?b=1&amp;c=2">docs</a>`},
		{"unsafe link stays", "[x](javascript:alert(1))", "[x](javascript:alert(1))"},
		{"no text mention link", "[Alice](tg://user?id=123)", "[Alice](tg://user?id=123)"},
		{"mention defused", "ask @alice", "ask @\u2060alice"},
		{"email kept", "a@b.co", "a@b.co"},
		{"mention in code kept", "`@alice`", "<code>@alice</code>"},
		{"heading", "## Plan", "<b>Plan</b>"},
		{"bullets", "- one\n* two", "• one\n• two"},
		{"fenced with lang", "```go\nif a < b {}\n```", `<pre><code class="language-go">if a &lt; b {}</code></pre>`},
		{"fenced plain", "```\n**not bold**\n```\nafter", "<pre>**not bold**</pre>\nafter"},
		{"unclosed fence", "```py\nx = 1", `<pre><code class="language-py">x = 1</code></pre>`},
		{"nested", "**bold _and it_**", "<b>bold <i>and it</i></b>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := toHTML(tt.md); got != tt.want {
				t.Errorf("toHTML(%q)\n got %q\nwant %q", tt.md, got, tt.want)
			}
		})
	}
}

// FuzzToHTMLBalanced checks the property Telegram needs most: whatever the
// input, tags open and close in order.
func FuzzToHTMLBalanced(f *testing.F) {
	for _, s := range []string{"**a *b* c**", "_x_ `y` ~~z~~", "```go\nx\n```", "[a](https://b) **", "***x***"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := toHTML(md)
		var stack []string
		for i := 0; i < len(out); i++ {
			if out[i] != '<' {
				continue
			}
			end := strings.IndexByte(out[i:], '>')
			if end < 0 {
				t.Fatalf("dangling < in %q", out)
			}
			tag := out[i+1 : i+end]
			i += end
			if name, ok := strings.CutPrefix(tag, "/"); ok {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					t.Fatalf("unbalanced </%s> in %q (from %q)", name, out, md)
				}
				stack = stack[:len(stack)-1]
				continue
			}
			stack = append(stack, strings.Fields(tag)[0])
		}
		if len(stack) != 0 {
			t.Fatalf("unclosed %v in %q (from %q)", stack, out, md)
		}
	})
}

func TestStripMention(t *testing.T) {
	ent := func(typ string, off, n int) tgbotapi.MessageEntity {
		return tgbotapi.MessageEntity{Type: typ, Offset: off, Length: n}
	}
	tests := []struct {
		name      string
		text      string
		entities  []tgbotapi.MessageEntity
		want      string
		mentioned bool
		forOther  bool
	}{
		{"mention in middle", "please @cc_bot fix it", []tgbotapi.MessageEntity{ent("mention", 7, 7)}, "please fix it", true, false},
		{"case insensitive", "@CC_Bot hi", []tgbotapi.MessageEntity{ent("mention", 0, 7)}, "hi", true, false},
		{"other mention kept", "@alice look", []tgbotapi.MessageEntity{ent("mention", 0, 6)}, "@alice look", false, false},
		{"bare command", "/new", []tgbotapi.MessageEntity{ent("bot_command", 0, 4)}, "/new", true, false},
		{"command with args", "/btw@cc_bot why?", []tgbotapi.MessageEntity{ent("bot_command", 0, 11)}, "/btw why?", true, false},
		{"command for other", "/new@x_bot", []tgbotapi.MessageEntity{ent("bot_command", 0, 10)}, "/new@x_bot", false, true},
		{"no entities fallback", "hey @cc_bot\nsecond line", nil, "hey\nsecond line", true, false},
		{"no entities longer name", "hey @cc_botty", nil, "hey @cc_botty", false, false},
		{"multiline kept", "@cc_bot line1\n\nline2", []tgbotapi.MessageEntity{ent("mention", 0, 7)}, "line1\n\nline2", true, false},
		{"indentation kept", "@cc_bot fix:\n```\n    x  =  1\n```", []tgbotapi.MessageEntity{ent("mention", 0, 7)}, "fix:\n```\n    x  =  1\n```", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, m, o := stripMention(tt.text, tt.entities, "cc_bot")
			if got != tt.want || m != tt.mentioned || o != tt.forOther {
				t.Errorf("stripMention(%q) = %q, %v, %v; want %q, %v, %v", tt.text, got, m, o, tt.want, tt.mentioned, tt.forOther)
			}
		})
	}
}

func BenchmarkSendFormatting(b *testing.B) {
	var sb strings.Builder
	for sb.Len() < 20000 {
		sb.WriteString("Some **bold** and `code` with a [link](https://example.com) & <tags>.\n\n```go\nfunc f() { return a < b }\n```\n")
	}
	text := sb.String()
	b.ResetTimer()
	for b.Loop() {
		for _, p := range splitForTelegram(text) {
			_ = toHTML(p)
		}
	}
}
