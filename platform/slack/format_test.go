package slack

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestToMrkdwn(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"bold", "a **bold** word", "a *bold* word"},
		{"underscore bold", "a __bold__ word", "a *bold* word"},
		{"italic star", "an *italic* word", "an _italic_ word"},
		{"italic underscore kept", "an _italic_ word", "an _italic_ word"},
		{"bold and italic side by side", "**b** and *i* and *j*", "*b* and _i_ and _j_"},
		{"bold italic", "***both***", "*_both_*"},
		{"strike", "~~gone~~", "~gone~"},
		{"snake_case untouched", "call my_func_name now", "call my_func_name now"},
		{"arithmetic untouched", "2 * 3 * 4", "2 * 3 * 4"},
		{"link", "see [the docs](https://x.io/a?b=1&c=2)", "see <https://x.io/a?b=1&amp;c=2|the docs>"},
		{"link with bold label", "[**docs**](https://x.io)", "<https://x.io|docs>"},
		{"link label equal to url", "[https://x.io](https://x.io)", "<https://x.io>"},
		{"link with parens", "[wiki](https://en.wikipedia.org/wiki/Go_(lang))", "<https://en.wikipedia.org/wiki/Go_(lang)|wiki>"},
		{"image", "![diagram](https://x.io/d.png)", "<https://x.io/d.png|diagram>"},
		{"autolink", "<https://x.io/?a=1&b=2>", "<https://x.io/?a=1&amp;b=2>"},
		{"escapes", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"no pings from text", "<!channel> hi <@U1>", "&lt;!channel&gt; hi &lt;@U1&gt;"},
		{"inline code unformatted, escaped", "run `a < b && **c**` now", "run `a &lt; b &amp;&amp; **c**` now"},
		{"double backtick span", "``a `b` c``", "``a `b` c``"},
		{"double backtick simple", "``x < y``", "`x &lt; y`"},
		{"unmatched backtick", "a ` b **c**", "a ` b *c*"},
		{"heading", "## Summary of **changes**", "*Summary of changes*"},
		{"heading with closing hashes", "# Title #", "*Title*"},
		{"bullets", "- one\n* two\n+ three\n  - nested", "• one\n• two\n• three\n  • nested"},
		{"task list", "- [ ] todo\n- [x] done", "☐ todo\n☑ done"},
		{"ordered list", "1. first **b**\n2) second", "1. first *b*\n2) second"},
		{"quote", "> quoted **text**", "> quoted *text*"},
		{"rule", "---", "──────────"},
		{"code block", "```go\nif a < b && c {\n\t**x** // [l](u)\n}\n```", "```\nif a &lt; b &amp;&amp; c {\n\t**x** // [l](u)\n}\n```"},
		{"tilde fence", "~~~\n<x>\n~~~", "```\n&lt;x&gt;\n```"},
		{"longer fence holds shorter", "````\n```\ninner\n```\n````", "```\n`\u200b`\u200b`\ninner\n`\u200b`\u200b`\n```"}, // Slack would end the block at the inner ```
		{"unterminated fence closed", "```\ncode", "```\ncode\n```"},
		{"table", "| Name | Size |\n|---|---:|\n| a.go | 12 |\n| **b**.go | 3 |\n| `x<y` | a \\| b |",
			"```\nName | Size\n-----|------\na.go | 12\nb.go | 3\nx&lt;y  | a | b\n```"},
		{"pipe text is not a table", "a | b", "a | b"},
		{"blank lines kept", "a\n\nb", "a\n\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ToMrkdwn(tt.in); got != tt.want {
				t.Errorf("ToMrkdwn(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSplitMrkdwn(t *testing.T) {
	var b strings.Builder
	b.WriteString("Intro with **bold** & <angles>.\n\n")
	b.WriteString("```python\n")
	for i := range 400 {
		fmt.Fprintf(&b, "print(%d)  # x < y & z\n", i)
	}
	b.WriteString("```\n\n")
	// Escaping triples & into &amp; (5 runes): a part at the limit before
	// conversion grows past it and must be split again.
	b.WriteString(strings.Repeat("& ", 3000))
	parts := splitMrkdwn(b.String(), MessageLimit)
	if len(parts) < 4 {
		t.Fatalf("%d parts, want at least 4", len(parts))
	}
	joined := strings.Join(parts, "\n")
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > MessageLimit {
			t.Errorf("part %d: %d runes > %d", i, n, MessageLimit)
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Errorf("part %d has an unbalanced fence", i)
		}
	}
	for i := range 400 {
		if !strings.Contains(joined, fmt.Sprintf("print(%d)  # x &lt; y &amp; z\n", i)) {
			t.Fatalf("code line %d lost or not escaped", i)
		}
	}
	if got := strings.Count(joined, "&amp;"); got != 3401 {
		t.Errorf("%d escaped ampersands, want 3401", got)
	}
	if !strings.HasPrefix(parts[0], "Intro with *bold* &amp; &lt;angles&gt;.") {
		t.Errorf("first part starts %q", parts[0][:40])
	}
}

func TestPlainText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"leading bot mention", "<@UBOT> fix it", "fix it"},
		{"mention with label", "<@UBOT|ccbot> fix it", "fix it"},
		{"inner bot mention", "please <@UBOT> fix it", "please fix it"},
		{"mention with colon", "<@UBOT>: fix it", "fix it"},
		{"mention with comma", " <@UBOT>, fix: it", "fix: it"},
		{"other mention first keeps punctuation", "<@U2>: ask <@UBOT>", "<@U2>: ask"},
		{"other user kept", "ask <@U2>", "ask <@U2>"},
		{"escapes undone", "if a &lt; b &amp;&amp; c &gt; d", "if a < b && c > d"},
		{"bare link", "<https://x.io/a>", "https://x.io/a"},
		{"labelled link", "<https://x.io|docs>", "docs (https://x.io)"},
		{"auto label", "<https://x.io|x.io>", "https://x.io"},
		{"mailto", "<mailto:a@b.c|a@b.c>", "a@b.c"},
		{"channel", "in <#C1|general>", "in #general"},
		{"special mention", "<!here> look", "@here look"},
		{"code indentation kept", "```\n  a\n    b\n```", "```\n  a\n    b\n```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := plainText(tt.in, "UBOT"); got != tt.want {
				t.Errorf("plainText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func BenchmarkToMrkdwn(b *testing.B) {
	var sb strings.Builder
	for i := range 200 {
		fmt.Fprintf(&sb, "- **item %d** with [link](https://x.io/%d) and `code < %d`\n", i, i, i)
	}
	md := sb.String()
	b.SetBytes(int64(len(md)))
	for b.Loop() {
		ToMrkdwn(md)
	}
}

func TestCutKeepsEntitiesWhole(t *testing.T) {
	if got := cut("abc &amp; def", 7); got != "abc …" {
		t.Errorf("cut = %q", got)
	}
	if got := cut("abc &amp; def", 11); got != "abc &amp; …" {
		t.Errorf("cut = %q", got)
	}
}
