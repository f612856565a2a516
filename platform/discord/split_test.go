package discord

import (
	"strings"
	"testing"
	"unicode/utf16"
)

// TestPostedPartsFit: what Send posts (the Markdown as it is, which
// Discord renders natively) is within Discord's 2,000-character limit for
// inputs built to defeat the splitter; counted in UTF-16 units, which is
// never less than Discord's count. (platform.FuzzSplitMessageUTF16 covers
// the splitter for any input.)
func TestPostedPartsFit(t *testing.T) {
	for name, md := range map[string]string{
		"emoji":           strings.Repeat("👋", 5000),
		"emoji in code":   "```\n" + strings.Repeat("👋👋👋👋\n", 1500) + "```",
		"long fence info": "```" + strings.Repeat("x", 3000) + "\n" + strings.Repeat("y\n", 2000) + "```",
		"long marker":     strings.Repeat("`", 1000) + "\n" + strings.Repeat(strings.Repeat("word ", 300)+"\n", 10),
		"one long line":   strings.Repeat("word ", 3000),
	} {
		t.Run(name, func(t *testing.T) {
			parts := splitForDiscord(md)
			if len(parts) < 2 {
				t.Fatalf("%d parts, want several", len(parts))
			}
			for i, p := range parts {
				if n := len(utf16.Encode([]rune(p))); n > messageLimit {
					t.Errorf("part %d is %d units, over %d", i, n, messageLimit)
				}
			}
		})
	}
}
