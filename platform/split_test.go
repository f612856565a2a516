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
			if utf8.RuneCountInString(p) > eff && len(parts) > 1 {
				t.Fatalf("part over limit %d: %d runes", eff, utf8.RuneCountInString(p))
			}
		}
		// A cut line may start a part with fence characters, which
		// stripFences would then drop: compare without any fence runs.
		unfenced := strings.NewReplacer("`", "", "~", "")
		nonSpace := func(s string) int {
			return len(unfenced.Replace(strings.Join(strings.Fields(stripFences(s)), "")))
		}
		if len(parts) > 1 && nonSpace(strings.Join(parts, "\n")) != nonSpace(text) {
			t.Fatalf("text lost or added: %d vs %d", nonSpace(strings.Join(parts, "\n")), nonSpace(text))
		}
	})
}

func TestSplitMessageUTF16(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		limit    int
		maxUnits int
		floor    int
		parts    int // how many parts, 0 for "more than one"
	}{
		{"fits", "hello 👋", 100, 100, 10, 1},
		{"runes fit but units do not", strings.Repeat("👋 ", 60), 200, 100, 10, 0},
		{"plain text split by runes", strings.Repeat("word ", 100), 100, 1000, 10, 0},
		{"emoji in a code block", "```\n" + strings.Repeat("👋👋👋\n", 100) + "```", 400, 300, 50, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitMessageUTF16(tt.text, tt.limit, tt.maxUnits, tt.floor)
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
			// Cuts fall on spaces and line breaks, so compare the words.
			if strings.Join(strings.Fields(stripFences(joined.String())), " ") != strings.Join(strings.Fields(stripFences(tt.text)), " ") {
				t.Errorf("text changed by splitting:\n%q\nvs\n%q", joined.String(), tt.text)
			}
		})
	}
}

func TestSplitMessageUTF16KeepsPartsAtTheFloor(t *testing.T) {
	// 60 emoji are 120 units: over maxUnits, but at the floor the part is
	// kept rather than split without end.
	text := strings.Repeat("👋", 60)
	got := SplitMessageUTF16(text, 64, 100, 64)
	if len(got) != 1 || got[0] != text {
		t.Errorf("got %q, want the text kept whole", got)
	}
}
