package telegram

import (
	"html"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cc-connect/cc-connect/platform"
)

// visibleUnits is the length Telegram counts for an HTML message: its text
// after entity parsing (tags gone, entities decoded), in UTF-16 units.
// (tagRE is the Telegram tests' tag pattern.)
func visibleUnits(htmlText string) int {
	return len(utf16.Encode([]rune(html.UnescapeString(tagRE.ReplaceAllString(htmlText, "")))))
}

// FuzzPostedPartsFit: what Send posts for each part (its HTML, or the part
// itself as the plain-text fallback) is within Telegram's limit as
// Telegram counts it.
func FuzzPostedPartsFit(f *testing.F) {
	f.Add("000\n~~~0000000000000000000000000000000000000000000000000000000000", 64, 128)
	f.Add(strings.Repeat("👋 **bold** & <tag> ", 40), 200, 300)
	f.Add("```python\n"+strings.Repeat("print('👋👋')\n", 40)+"```", 150, 200)
	f.Fuzz(func(t *testing.T, md string, limit, maxUnits int) {
		if !utf8.ValidString(md) || limit < 1 || limit > 8000 || maxUnits < 128 || maxUnits > 8000 {
			t.Skip()
		}
		for i, p := range platform.SplitMessageUTF16(md, limit, maxUnits) {
			if n := len(utf16.Encode([]rune(p))); n > maxUnits {
				t.Fatalf("plain part %d is %d units, over %d", i, n, maxUnits)
			}
			if n := visibleUnits(toHTML(p)); n > maxUnits {
				t.Fatalf("part %d shows %d units as HTML, over %d", i, n, maxUnits)
			}
		}
	})
}

func TestPostedPartsFitPathologicalInput(t *testing.T) {
	for name, md := range map[string]string{
		"emoji":           strings.Repeat("👋", 9000),
		"emoji in code":   "```\n" + strings.Repeat("👋👋👋👋\n", 3000) + "```",
		"long fence info": "~~~" + strings.Repeat("x", 9000) + "\n" + strings.Repeat("y\n", 3000),
		"escapes":         strings.Repeat("<&>", 5000),
		"long marker":     strings.Repeat("`", 2100) + "\n" + strings.Repeat(strings.Repeat("word ", 600)+"\n", 10),
	} {
		t.Run(name, func(t *testing.T) {
			for i, p := range splitForTelegram(md) {
				if n := visibleUnits(toHTML(p)); n > messageLimit {
					t.Errorf("part %d shows %d units, over %d", i, n, messageLimit)
				}
				if n := len(utf16.Encode([]rune(p))); n > messageLimit {
					t.Errorf("plain part %d is %d units, over %d", i, n, messageLimit)
				}
			}
		})
	}
}
