package ctxindicator

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// SelfReportInstruction asks Claude to end each reply with its own estimate
// of how full its context window is. The engine passes it with
// --append-system-prompt (and --system-prompt-snapshot off, so turning it
// on or off reaches resumed sessions too); StripSelfReport removes the
// marker before the reply is relayed.
const SelfReportInstruction = "End every reply with a last line of the form [ctx: ~XX%], " +
	"where XX is your own estimate of how full your context window is, as a whole percentage (0-100). " +
	"Put it after everything else and outside any code block. " +
	"It is removed before the user sees your reply, so do not mention it."

// markerRE matches a self-report marker in its spacing and case variants:
// [ctx: ~62%], [ctx:62%], [ ctx : ~ 62 % ], [CTX: 62.5%]. Spaces and tabs
// only: a marker never spans lines.
var markerRE = regexp.MustCompile(`(?i)\[[ \t]*ctx[ \t]*:[ \t]*(?:~|≈)?[ \t]*(\d{1,3}(?:\.\d+)?)[ \t]*%[ \t]*\]`)

// StripSelfReport finds the last self-report marker of a reply outside
// code (fenced blocks and inline code are never parsed nor changed),
// removes that marker and the whitespace it leaves, and returns Claude's
// estimate rounded to a whole percent. Earlier markers stay as they are:
// only the last one is the report. A value that rounds above 100 is not a
// marker. When there is no marker, the reply is returned unchanged with ok
// false. A reply that is only a marker becomes "" (the caller decides what
// to post).
func StripSelfReport(reply string) (cleaned string, pct int, ok bool) {
	matches := markerRE.FindAllStringSubmatchIndex(reply, -1)
	if len(matches) == 0 {
		return reply, 0, false
	}
	code := codeSpans(reply)
	for i := len(matches) - 1; i >= 0; i-- {
		m := matches[i]
		if inSpans(code, m[0], m[1]) {
			continue
		}
		v, err := strconv.ParseFloat(reply[m[2]:m[3]], 64)
		if err != nil {
			continue
		}
		// Rounded first, so 100.4 is 100, while 100.6 is out of range and
		// left in the text like any other value above 100.
		r := math.Round(v)
		if r > 100 {
			continue
		}
		return removeMarker(reply, m[0], m[1], code), int(r), true
	}
	return reply, 0, false
}

// removeMarker cuts reply[start:end] and tidies what it leaves: a line that
// held only the marker goes (with a blank line it would double), trailing
// whitespace at the end of the reply goes, and a marker inside a line
// leaves one space between its neighbours. Whitespace inside code spans
// is never trimmed.
func removeMarker(reply string, start, end int, code []span) string {
	lineStart := strings.LastIndexByte(reply[:start], '\n') + 1
	lineEnd, next := lineBounds(reply, end)
	before, after := reply[lineStart:start], reply[end:lineEnd]
	blankBefore := strings.TrimSpace(before) == ""
	blankAfter := strings.TrimSpace(after) == ""

	if blankBefore && blankAfter {
		head, tail := reply[:lineStart], reply[next:]
		switch {
		case strings.TrimSpace(tail) == "":
			return trimRightOutside(head, code)
		case strings.TrimSpace(head) == "":
			return dropLeadingBlankLines(tail)
		case endsWithBlankLine(head) && startsWithBlankLine(tail):
			_, nx := lineBounds(tail, 0)
			return head + tail[nx:]
		}
		return head + tail
	}

	left := max(strings.LastIndexFunc(before, notHSpace)+1+lineStart, floorOutside(code, start))
	right := min(end+strings.IndexFunc(after+"x", notHSpace), ceilOutside(code, end, len(reply)))
	switch {
	case blankAfter:
		// "Done. [ctx: 5%]": drop the marker and the spaces before it,
		// then any trailing whitespace if the reply ends here.
		if strings.TrimSpace(reply[next:]) == "" {
			return trimRightOutside(reply[:left], code)
		}
		return reply[:left] + reply[lineEnd:]
	case blankBefore:
		// "[ctx: 5%] Hello": keep the indentation, drop the gap after.
		return reply[:start] + reply[right:]
	case left < start || right > end:
		return reply[:left] + " " + reply[right:]
	}
	return reply[:start] + reply[end:]
}

func notHSpace(r rune) bool { return r != ' ' && r != '\t' && r != '\r' }

// trimRightOutside trims trailing whitespace from s, stopping at the end of
// the last code span inside s.
func trimRightOutside(s string, code []span) string {
	floor := floorOutside(code, len(s))
	return s[:floor] + strings.TrimRight(s[floor:], " \t\r\n")
}

func dropLeadingBlankLines(s string) string {
	for s != "" {
		lineEnd, next := lineBounds(s, 0)
		if strings.TrimSpace(s[:lineEnd]) != "" {
			break
		}
		s = s[next:]
	}
	return s
}

// endsWithBlankLine reports whether s (text up to a line start) ends with an
// empty or whitespace-only line.
func endsWithBlankLine(s string) bool {
	s = strings.TrimSuffix(s, "\n")
	i := strings.LastIndexByte(s, '\n')
	return strings.TrimSpace(s[i+1:]) == ""
}

func startsWithBlankLine(s string) bool {
	lineEnd, _ := lineBounds(s, 0)
	return strings.TrimSpace(s[:lineEnd]) == ""
}
