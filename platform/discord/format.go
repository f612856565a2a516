package discord

import "strings"

// discordMarkdown readies Claude's Markdown for Discord, which renders
// Markdown itself but ends a code block at the first ``` inside it, however
// long the fence that opened it: every fenced block is opened and closed
// with ``` (keeping its language), and the backtick runs inside are broken
// with zero-width spaces, so code cannot end its own block and show the
// rest as formatting. A block left open (a cut reply) is closed.
func discordMarkdown(md string) string {
	if !strings.Contains(md, "```") && !strings.Contains(md, "~~~") {
		return md
	}
	lines := strings.Split(md, "\n")
	fence := ""
	for i, l := range lines {
		if fence == "" {
			if marker, lang, ok := openFence(l); ok {
				fence = marker
				lines[i] = "```" + lang
			}
			continue
		}
		if closesFence(l, fence) {
			fence = ""
			lines[i] = "```"
			continue
		}
		lines[i] = breakFences(l)
	}
	if fence != "" {
		lines = append(lines, "```")
	}
	return strings.Join(lines, "\n")
}

// openFence reports whether line opens a fenced code block (``` or ~~~,
// up to three spaces of indent), with the fence and a language Discord can
// take ("" for none or an odd one).
func openFence(line string) (marker, lang string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return "", "", false
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 {
		return "", "", false
	}
	info := strings.TrimSpace(t[n:])
	if t[0] == '`' && strings.Contains(info, "`") {
		return "", "", false
	}
	if f := strings.Fields(info); len(f) > 0 && plainLang(f[0]) {
		lang = f[0]
	}
	return t[:n], lang, true
}

func plainLang(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("+-_.#", r)) {
			return false
		}
	}
	return len(s) <= 32
}

func closesFence(line, marker string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, marker) && strings.Trim(t, marker[:1]) == ""
}

// zeroWidthSpace separates backticks that must not read as a fence.
const zeroWidthSpace = "\u200b"

// breakFences puts a zero-width space between the backticks of every run
// of two or more in a line of code, so no ``` is left in it. The backticks
// all stay in sight.
func breakFences(s string) string {
	if !strings.Contains(s, "``") {
		return s
	}
	var b strings.Builder
	run := 0
	for _, r := range s {
		if r == '`' {
			if run > 0 {
				b.WriteString(zeroWidthSpace)
			}
			run++
		} else {
			run = 0
		}
		b.WriteRune(r)
	}
	return b.String()
}
