package slack

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSplitMrkdwn: the promise is about what is posted, after the
// conversion to mrkdwn (which escapes &, < and > into several characters
// and pads tables): no part over the limit, none empty.
func FuzzSplitMrkdwn(f *testing.F) {
	f.Add("000\n~~~0000000000000000000000000000000000000000000000000000000000", 64)
	f.Add(strings.Repeat("a & b < c > d ", 40), 100)
	f.Add("| a | b |\n|---|---|\n| "+strings.Repeat("long cell ", 20)+" | x |\n| y | z |\n", 80)
	f.Add("```go\n"+strings.Repeat("if a < b && c > d {}\n", 30)+"```", 120)
	f.Fuzz(func(t *testing.T, md string, limit int) {
		if !utf8.ValidString(md) || strings.TrimSpace(md) == "" || limit < 64 || limit > 8000 {
			t.Skip()
		}
		for i, p := range splitMrkdwn(md, limit) {
			if n := utf8.RuneCountInString(p); n > limit {
				t.Fatalf("part %d has %d runes, over %d", i, n, limit)
			}
			if strings.TrimSpace(p) == "" {
				t.Fatalf("part %d is empty", i)
			}
		}
	})
}

// TestPostedPartsFitPathologicalInput runs what Send and Edit post for
// inputs built to grow in conversion.
func TestPostedPartsFitPathologicalInput(t *testing.T) {
	inputs := map[string]string{
		"escapes":          strings.Repeat("<&>", 5000),
		"long fence info":  "```" + strings.Repeat("x", 5000) + "\n" + strings.Repeat("code\n", 2000) + "```",
		"padded table":     "| a | b |\n|---|---|\n" + strings.Repeat("| "+strings.Repeat("w", 300)+" | x |\n| y | z |\n", 40),
		"one long word":    strings.Repeat("é", 20000),
		"nested backticks": strings.Repeat("````\n```\n", 800),
	}
	for name, md := range inputs {
		t.Run(name, func(t *testing.T) {
			for i, p := range splitMrkdwn(md, MessageLimit) {
				if n := utf8.RuneCountInString(p); n > MessageLimit {
					t.Errorf("part %d has %d runes, over %d", i, n, MessageLimit)
				}
			}
			if n := utf8.RuneCountInString(splitMrkdwn(md, MessageLimit-2)[0] + "\n…"); n > MessageLimit {
				t.Errorf("an edit of %d runes, over %d", n, MessageLimit)
			}
		})
	}
}
