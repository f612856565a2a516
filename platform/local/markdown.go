package local

import (
	"regexp"
	"strings"
)

// The one place where the engine's Markdown (replies, permission prompts,
// questions, notices) becomes what a terminal shows: the marks go, code
// blocks are indented, and on a terminal bold, code and the context line
// are styled with escape codes. Piped output gets the same text without
// any escape code.

// ANSI styles; each ends with styleOff.
const (
	styleBold = "\x1b[1m"
	styleDim  = "\x1b[2m"
	styleCode = "\x1b[36m" // cyan
	styleOff  = "\x1b[0m"
)

var (
	reCode      = regexp.MustCompile("`+([^`]+?)`+")
	reBold      = regexp.MustCompile(`\*\*([^*\n]+?)\*\*|__([^_\n]+?)__`)
	reItalic    = regexp.MustCompile(`(^|[\s(])[*_]([^*_\s][^*_\n]*?)[*_]($|[\s).,:;!?])`)
	reStrike    = regexp.MustCompile(`(^|[\s(])~~?([^~\s][^~\n]*?)~~?($|[\s).,:;!?])`)
	reLink      = regexp.MustCompile(`\[([^\]\n]+)\]\((\S+?)\)`)
	reEscape    = regexp.MustCompile(`\\([\\` + "`" + `*_{}\[\]()#+\-.!~|>])`)
	reHeading   = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	reCtxLine   = regexp.MustCompile(`^\[ctx: [^\]]*\]\s*$`)
	reFenceLine = regexp.MustCompile("^\\s*(```+|~~~+)")
)

// mdLines renders Markdown for a terminal a line at a time, keeping
// whether a code block is open between calls (a streamed reply arrives in
// pieces of whole lines).
type mdLines struct {
	styled bool   // escape codes allowed (the output is a terminal)
	fence  string // the fence of the open code block; "" outside one
}

// text renders a whole text: every line of it.
func (m *mdLines) text(s string) string {
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if r, ok := m.line(l); ok {
			out = append(out, r)
		}
	}
	return strings.Join(out, "\n")
}

// line renders one line; ok is false for a line that shows nothing (a
// code fence).
func (m *mdLines) line(l string) (string, bool) {
	if f := reFenceLine.FindStringSubmatch(l); f != nil {
		mark := f[1]
		switch {
		case m.fence == "":
			m.fence = mark
			return "", false
		case mark[0] == m.fence[0] && len(mark) >= len(m.fence) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), mark[:1])) == "":
			m.fence = ""
			return "", false
		}
	}
	if m.fence != "" {
		return "    " + m.style(styleCode, l), true
	}
	if reCtxLine.MatchString(l) {
		return m.style(styleDim, strings.TrimSpace(l)), true
	}
	if h := reHeading.FindStringSubmatch(l); h != nil {
		return m.style(styleBold, inline(h[1], false)), true
	}
	if rest, ok := strings.CutPrefix(l, "> "); ok || l == ">" {
		return "│ " + m.inline(rest), true
	}
	return m.inline(l), true
}

// inline removes the inline marks of one line, styling what they marked.
func (m *mdLines) inline(l string) string { return inline(l, m.styled) }

func inline(l string, styled bool) string {
	st := func(style, s string) string {
		if !styled {
			return s
		}
		return style + s + styleOff
	}
	// Code spans first: their content is shown as it is, marks and all.
	var parts []string
	last := 0
	for _, loc := range reCode.FindAllStringSubmatchIndex(l, -1) {
		parts = append(parts, inlineMarks(l[last:loc[0]], st))
		parts = append(parts, st(styleCode, l[loc[2]:loc[3]]))
		last = loc[1]
	}
	parts = append(parts, inlineMarks(l[last:], st))
	return strings.Join(parts, "")
}

func inlineMarks(s string, st func(style, s string) string) string {
	s = reLink.ReplaceAllStringFunc(s, func(m string) string {
		g := reLink.FindStringSubmatch(m)
		if g[1] == g[2] {
			return g[1]
		}
		return g[1] + " (" + g[2] + ")"
	})
	s = reBold.ReplaceAllStringFunc(s, func(m string) string {
		g := reBold.FindStringSubmatch(m)
		return st(styleBold, g[1]+g[2])
	})
	s = reItalic.ReplaceAllString(s, "$1$2$3")
	s = reStrike.ReplaceAllString(s, "$1$2$3")
	return reEscape.ReplaceAllString(s, "$1")
}

func (m *mdLines) style(style, s string) string {
	if !m.styled || s == "" {
		return s
	}
	return style + s + styleOff
}

// terminalText is text as the terminal shows it.
func terminalText(text string, styled bool) string {
	m := mdLines{styled: styled}
	return m.text(text)
}
