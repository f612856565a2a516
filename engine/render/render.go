// Package render is the text and blocks a person sees of a conversation:
// the approval view of a permission request, Claude's questions and plans,
// the live view of a running turn (its status line, tool log, checklist
// and the reply while it is written), the replies of the chat commands
// (!status, !sessions, !help) and the notices. Each is a function of
// values: render holds no session, does no I/O and imports no engine
// package, so that what a person reads can be read and table-tested
// alone. Deciding what to show, and when, is the conversation's
// (engine/conv).
package render

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Quote is s cut to n characters for a notice or a log, on one line.
func Quote(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}

// spaceRun is the shortest run of spaces or tabs Visible shows as a
// count, so that blank space cannot push the rest of a line out of sight.
const spaceRun = 32

// Visible makes every character of s show: control characters (an escape
// sequence could redraw a terminal), invisible ones (zero-width,
// bidirectional overrides that reorder what is shown, tag characters),
// spaces other than the ASCII one (a no-break space reads as a word break
// but is not one to a shell) and private-use characters are written as
// ⟨U+XXXX⟩; long runs of spaces or tabs as their count. Newlines and
// shorter runs of tabs stay.
func Visible(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "⟨byte %02X⟩", s[i])
		case r == ' ' || r == '\t':
			n := 0
			for i+n < len(s) && (s[i+n] == ' ' || s[i+n] == '\t') {
				n++
			}
			if n >= spaceRun {
				fmt.Fprintf(&b, "⟨%d spaces or tabs⟩", n)
			} else {
				b.WriteString(s[i : i+n])
			}
			i += n
			continue
		case r == '\n':
			b.WriteByte('\n')
		case hidden(r):
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// hidden reports whether r does not show as itself.
func hidden(r rune) bool {
	switch {
	case unicode.IsControl(r), // C0, DEL, C1 (\r, ESC, backspace)
		unicode.Is(unicode.Cf, r),                            // zero-width, bidi controls, soft hyphen, tags
		unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r), // line and paragraph separators
		unicode.Is(unicode.Zs, r) && r != ' ', // no-break and other spaces
		unicode.Is(unicode.Co, r),             // private use
		unicode.Is(unicode.Variation_Selector, r),
		r == 0x034F,                                        // combining grapheme joiner
		r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, // Hangul fillers
		r == 0x2800: // braille blank
		return true
	}
	return false
}

// chatText is Claude's text made safe to show: every character visible,
// bounded, on the lines it has.
func chatText(s string, n int) string { return Quote(Visible(s), n) }

// escapeMD keeps Claude's words from being read as the chat's markup.
func escapeMD(s string) string {
	r := strings.NewReplacer("*", "\\*", "_", "\\_", "`", "'", "~", "\\~", "[", "\\[", "]", "\\]")
	return r.Replace(s)
}

// fenced puts s in a Markdown code block whose fence is longer than any
// run of backticks in s, so that s cannot close it (CommonMark; every
// adapter renders such a block as code, see platform.PermissionPrompt).
func fenced(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + "\n" + s + "\n" + fence
}

// Thousands writes n as 150,000.
func Thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Size is a byte count as a person reads it: 12 B, 4 KB, 1.5 MB.
func Size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}

// Age is a duration as a person reads it: 42s, 5m, 3h07m, 4d.
func Age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// lowerFirst lowers the first letter of a sentence that goes after a
// colon.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
