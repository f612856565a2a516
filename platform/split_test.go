package platform

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// fencesBalanced reports whether every fenced block opened in s is closed.
func fencesBalanced(s string) bool {
	open := ""
	for _, l := range strings.Split(s, "\n") {
		marker, lang, ok := fenceLine(l)
		if !ok {
			continue
		}
		if open == "" {
			open = marker
		} else if strings.HasPrefix(marker, open) && lang == "" {
			open = ""
		}
	}
	return open == ""
}

// stripFences removes fence lines, to compare content across parts.
func stripFences(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if _, _, ok := fenceLine(l); ok {
			continue
		}
		if t := strings.TrimSpace(l); t != "" {
			b.WriteString(t)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestSplitMessage(t *testing.T) {
	para := strings.Repeat("word ", 30) // 150 runes
	code := "```go\n" + strings.Repeat("fmt.Println(\"line\")\n", 40) + "```\n"
	tests := []struct {
		name      string
		text      string
		limit     int
		wantParts int // 0 = don't check
	}{
		{"short stays whole", "hello", 100, 1},
		{"exact limit stays whole", strings.Repeat("a", 100), 100, 1},
		{"paragraphs", strings.Repeat(para+"\n\n", 10), 400, 0},
		{"code block across parts", "Intro text.\n\n" + code + "\nAfter the code.", 300, 0},
		{"tilde fence", "~~~\n" + strings.Repeat("x y z\n", 100) + "~~~\n", 200, 0},
		{"one long line", strings.Repeat("abcdefghij ", 100), 200, 0},
		{"long word without spaces", strings.Repeat("é", 1000), 150, 0},
		{"unicode runes count once", strings.Repeat("😀", 90), 100, 1},
		{"mixed", "# Title\n\n" + para + "\n\n" + code + para + "\n\n- a\n- b\n" + code, 256, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := SplitMessage(tt.text, tt.limit)
			if tt.wantParts != 0 && len(parts) != tt.wantParts {
				t.Fatalf("got %d parts, want %d", len(parts), tt.wantParts)
			}
			for i, p := range parts {
				if n := utf8.RuneCountInString(p); n > tt.limit {
					t.Errorf("part %d has %d runes, over the limit %d", i, n, tt.limit)
				}
				if strings.TrimSpace(p) == "" {
					t.Errorf("part %d is empty", i)
				}
				if !fencesBalanced(p) {
					t.Errorf("part %d leaves a code block open:\n%s", i, p)
				}
			}
			joined := strings.Join(parts, "\n")
			if got, want := strings.ReplaceAll(stripFences(joined), "\n", ""), strings.ReplaceAll(stripFences(tt.text), "\n", ""); strings.ReplaceAll(got, " ", "") != strings.ReplaceAll(want, " ", "") {
				t.Errorf("content changed by splitting\n got: %.200q\nwant: %.200q", got, want)
			}
		})
	}
}

func TestSplitMessageReopensFenceWithLanguage(t *testing.T) {
	text := "```python\n" + strings.Repeat("print('hello world')\n", 30) + "```"
	parts := SplitMessage(text, 200)
	if len(parts) < 2 {
		t.Fatalf("want several parts, got %d", len(parts))
	}
	for i, p := range parts {
		if !strings.HasPrefix(p, "```python\n") {
			t.Errorf("part %d does not (re)open the python fence: %.40q", i, p)
		}
		if !strings.HasSuffix(p, "```") {
			t.Errorf("part %d does not close the fence: %.40q", i, p[max(0, len(p)-40):])
		}
	}
}

func TestSplitMessagePrefersParagraphBreak(t *testing.T) {
	first := strings.Repeat("a", 70) + "\n" + strings.Repeat("b", 70)
	second := strings.Repeat("c", 70)
	parts := SplitMessage(first+"\n\n"+second, 180)
	if len(parts) != 2 || parts[0] != first || parts[1] != second {
		t.Fatalf("want a cut at the paragraph break, got %q", parts)
	}
}

func TestSplitMessageNeverLosesText(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 500; i++ {
		b.WriteString("token")
		b.WriteString(strings.Repeat(" ", i%3))
		if i%17 == 0 {
			b.WriteString("\n")
		}
		if i%101 == 0 {
			b.WriteString("\n```\ncode\n")
		}
	}
	text := b.String()
	parts := SplitMessage(text, 120)
	got := strings.Count(strings.Join(parts, ""), "token")
	if got != 500 {
		t.Fatalf("found %d tokens after splitting, want 500", got)
	}
}

func FuzzSplitMessage(f *testing.F) {
	f.Add("hello\n\n```go\ncode\n```\nbye", 64)
	f.Add(strings.Repeat("x ", 200), 70)
	f.Add("~~~~\n~~~\n"+strings.Repeat("y\n", 80)+"~~~~", 64)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if !utf8.ValidString(text) || limit > 10000 {
			t.Skip()
		}
		parts := SplitMessage(text, limit)
		eff := max(limit, minSplitLimit)
		for _, p := range parts {
			if utf8.RuneCountInString(p) > eff {
				t.Fatalf("part over limit %d: %d runes", eff, utf8.RuneCountInString(p))
			}
		}
		// Together the parts' bodies (without the fences added to them)
		// hold the text; only whitespace may differ where lines were cut.
		_, bodies := split(text, limit)
		if got, want := noSpace(strings.Join(bodies, "")), noSpace(text); got != want {
			t.Fatalf("text lost or added:\n got %.200q\nwant %.200q", got, want)
		}
		if len(bodies) != len(parts) {
			t.Fatalf("%d bodies for %d parts", len(bodies), len(parts))
		}
		for i, b := range bodies {
			if !strings.Contains(parts[i], strings.TrimRight(b, " \t\n")) {
				t.Fatalf("part %d does not hold its body:\n%q\n%q", i, parts[i], b)
			}
		}
	})
}

func TestSplitMessageUTF16(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		limit    int
		maxUnits int
		parts    int // how many parts, 0 for "more than one"
	}{
		{"fits", "hello 👋", 100, 200, 1},
		{"runes fit but units do not", strings.Repeat("👋 ", 60), 200, 128, 0},
		{"plain text split by runes", strings.Repeat("word ", 100), 100, 1000, 0},
		{"emoji in a code block", "```\n" + strings.Repeat("👋👋👋\n", 100) + "```", 400, 300, 0},
		{"emoji only, at the smallest unit limit", strings.Repeat("👋", 300), 200, 128, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitMessageUTF16(tt.text, tt.limit, tt.maxUnits)
			if tt.parts > 0 && len(got) != tt.parts || tt.parts == 0 && len(got) < 2 {
				t.Fatalf("%d parts, want %d (0: several)", len(got), tt.parts)
			}
			var joined strings.Builder
			for i, p := range got {
				if n := utf16Len(p); n > tt.maxUnits {
					t.Errorf("part %d is %d UTF-16 units, max %d", i, n, tt.maxUnits)
				}
				if !fencesBalanced(p) {
					t.Errorf("part %d leaves a fence open: %q", i, p)
				}
				joined.WriteString(p + "\n")
			}
			// Cuts fall on spaces and line breaks where there are any.
			if noSpace(stripFences(joined.String())) != noSpace(stripFences(tt.text)) {
				t.Errorf("text changed by splitting:\n%q\nvs\n%q", joined.String(), tt.text)
			}
		})
	}
}

// FuzzSplitMessageUTF16: no part is over maxUnits UTF-16 units, for any
// maxUnits from 2*minSplitLimit up.
func FuzzSplitMessageUTF16(f *testing.F) {
	f.Add(strings.Repeat("👋", 300), 200, 128)
	f.Add("```go\n"+strings.Repeat("x := \"👋👋\"\n", 50)+"```", 100, 150)
	f.Fuzz(func(t *testing.T, text string, limit, maxUnits int) {
		if !utf8.ValidString(text) || limit > 10000 || maxUnits < 2*minSplitLimit || maxUnits > 20000 {
			t.Skip()
		}
		for _, p := range SplitMessageUTF16(text, limit, maxUnits) {
			if n := utf16Len(p); n > maxUnits {
				t.Fatalf("part of %d units, over %d", n, maxUnits)
			}
		}
	})
}

// noSpace is s without its whitespace.
func noSpace(s string) string { return strings.Join(strings.Fields(s), "") }
