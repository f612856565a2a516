package ctxindicator

import (
	"strings"
	"testing"
)

func TestStripSelfReportMarkerForms(t *testing.T) {
	tests := []struct {
		marker string
		want   int
	}{
		{"[ctx: ~62%]", 62},
		{"[ctx: 62%]", 62},
		{"[ctx:62%]", 62},
		{"[ctx:~62%]", 62},
		{"[ ctx : ~ 62 % ]", 62},
		{"[CTX: 62%]", 62},
		{"[Ctx: ~62%]", 62},
		{"[ctx:\t~62%]", 62},
		{"[ctx: ≈62%]", 62},
		{"[ctx: ~0%]", 0},
		{"[ctx: ~100%]", 100},
		{"[ctx: ~7%]", 7},
		{"[ctx: ~62.4%]", 62},
		{"[ctx: ~62.5%]", 63},
		{"[ctx: ~100.4%]", 100},
	}
	for _, tt := range tests {
		t.Run(tt.marker, func(t *testing.T) {
			got, pct, ok := StripSelfReport("Done.\n\n" + tt.marker)
			if !ok || pct != tt.want || got != "Done." {
				t.Errorf("StripSelfReport = %q, %d, %v; want %q, %d, true", got, pct, ok, "Done.", tt.want)
			}
		})
	}
}

func TestStripSelfReportNotAMarker(t *testing.T) {
	for _, reply := range []string{
		"no marker at all",
		"[ctx: 62]",          // no percent sign
		"[ctx 62%]",          // no colon
		"[context: 62%]",     // another word
		"[ctx: ~101%]",       // out of range
		"[ctx: ~100.6%]",     // rounds past 100
		"[ctx: ~1000%]",      // too many digits
		"[ctx: -5%]",         // negative
		"[ctx:\n62%]",        // spans lines
		"ctx: 62%",           // no brackets
		"[ctx: about 62%]",   // words
		"[ctx: ~62%",         // unclosed
		"text `[ctx: ~62%]`", // inline code
	} {
		t.Run(reply, func(t *testing.T) {
			got, pct, ok := StripSelfReport(reply)
			if ok || got != reply || pct != 0 {
				t.Errorf("StripSelfReport(%q) = %q, %d, %v; want it unchanged and not found", reply, got, pct, ok)
			}
		})
	}
}

func TestStripSelfReportTidiesAndKeepsCode(t *testing.T) {
	tests := []struct {
		name    string
		reply   string
		want    string
		wantPct int
		wantOK  bool
	}{
		{"own line after blank line", "Answer.\n\n[ctx: ~62%]", "Answer.", 62, true},
		{"own line with trailing newline", "Answer.\n[ctx: ~62%]\n", "Answer.", 62, true},
		{"own line with trailing blank lines and CRLF", "Answer.\r\n\r\n[ctx: ~62%]\r\n\r\n", "Answer.", 62, true},
		{"end of the last line", "Answer. [ctx: ~62%]", "Answer.", 62, true},
		{"end of the last line, no space", "Answer.[ctx: ~62%]", "Answer.", 62, true},
		{"only a marker", "[ctx: ~62%]", "", 62, true},
		{"only a marker with whitespace", "\n  [ctx: ~62%]  \n", "", 62, true},
		{"first line", "[ctx: ~62%]\n\nAnswer.", "Answer.", 62, true},
		{"start of a line", "Intro\n[ctx: ~62%] Answer.", "Intro\nAnswer.", 62, true},
		{"start of an indented line", "Intro\n  [ctx: ~62%] Answer.", "Intro\n  Answer.", 62, true},
		{"middle of a line", "a [ctx: ~62%] b", "a b", 62, true},
		{"middle of a line, no spaces", "a[ctx: ~62%]b", "ab", 62, true},
		{"end of a middle line", "a [ctx: ~62%]\nb", "a\nb", 62, true},
		{"own line between paragraphs", "para one\n\n[ctx: ~62%]\n\npara two", "para one\n\npara two", 62, true},
		{"own line inside a paragraph", "line one\n[ctx: ~62%]\nline two", "line one\nline two", 62, true},
		{
			"several markers: last wins, others stay",
			"First [ctx: ~10%] then more.\n\n[ctx: ~30%]\n\nEnd.\n\n[ctx: ~62%]",
			"First [ctx: ~10%] then more.\n\n[ctx: ~30%]\n\nEnd.",
			62, true,
		},
		{
			"backtick fence untouched, marker after it stripped",
			"```\n[ctx: ~10%]\n```\n\n[ctx: ~62%]",
			"```\n[ctx: ~10%]\n```",
			62, true,
		},
		{
			"only marker is in a fence",
			"Here:\n```text\nreply ends with [ctx: ~62%]\n```",
			"Here:\n```text\nreply ends with [ctx: ~62%]\n```",
			0, false,
		},
		{
			"tilde fence",
			"~~~\n[ctx: ~62%]\n~~~",
			"~~~\n[ctx: ~62%]\n~~~",
			0, false,
		},
		{
			"unclosed fence runs to the end",
			"```go\nx := 1\n[ctx: ~62%]",
			"```go\nx := 1\n[ctx: ~62%]",
			0, false,
		},
		{
			"longer fence is not closed by a shorter one",
			"````\n```\n[ctx: ~62%]\n````\n[ctx: ~5%]",
			"````\n```\n[ctx: ~62%]\n````",
			5, true,
		},
		{
			"indented fence in a list",
			"1. step\n   ```sh\n   echo [ctx: ~62%]\n   ```",
			"1. step\n   ```sh\n   echo [ctx: ~62%]\n   ```",
			0, false,
		},
		{
			"inline code untouched, marker outside stripped",
			"Claude writes `[ctx: ~10%]` here.\n[ctx: ~62%]",
			"Claude writes `[ctx: ~10%]` here.",
			62, true,
		},
		{
			"double-backtick inline code",
			"see ``a ` [ctx: ~10%]`` ok",
			"see ``a ` [ctx: ~10%]`` ok",
			0, false,
		},
		{
			"triple-backtick inline span on one line",
			"run ```[ctx: ~10%]``` now",
			"run ```[ctx: ~10%]``` now",
			0, false,
		},
		{
			"stray backtick does not hide a later marker",
			"press ` to open.\n\nDone.\n\n[ctx: ~62%]",
			"press ` to open.\n\nDone.",
			62, true,
		},
		{
			"escaped backtick is literal",
			"a \\` b [ctx: ~62%] c `d`",
			"a \\` b c `d`",
			62, true,
		},
		{
			"spaces on a closing fence line are kept",
			"```\ncode\n```   \n[ctx: ~62%]",
			"```\ncode\n```   ",
			62, true,
		},
		{
			"inline code ending in spaces keeps them",
			"`x  `[ctx: ~62%]",
			"`x  `",
			62, true,
		},
		{
			"marker right after a fence on the closing line",
			"```\ncode\n```\n[ctx: ~62%]",
			"```\ncode\n```",
			62, true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, pct, ok := StripSelfReport(tt.reply)
			if got != tt.want || pct != tt.wantPct || ok != tt.wantOK {
				t.Errorf("StripSelfReport(%q)\n got %q, %d, %v\nwant %q, %d, %v", tt.reply, got, pct, ok, tt.want, tt.wantPct, tt.wantOK)
			}
		})
	}
}

func TestSelfReportInstructionMatchesParser(t *testing.T) {
	// The example in the instruction must itself parse once XX is filled in,
	// or Claude would be asked for a form the parser refuses.
	const example = "[ctx: ~XX%]"
	if !strings.Contains(SelfReportInstruction, example) {
		t.Fatalf("instruction does not show %s: %q", example, SelfReportInstruction)
	}
	_, pct, ok := StripSelfReport("ok\n" + strings.Replace(example, "XX", "41", 1))
	if !ok || pct != 41 {
		t.Errorf("filled-in example parsed as %d, %v", pct, ok)
	}
	if len(SelfReportInstruction) > 400 {
		t.Errorf("instruction is %d bytes; it is sent with every request, keep it short", len(SelfReportInstruction))
	}
}
