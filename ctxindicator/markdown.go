package ctxindicator

import "strings"

// span is a half-open byte range [start, end) of a reply.
type span struct{ start, end int }

// codeSpans returns the byte ranges of a Markdown reply that are code:
// fenced blocks (``` or ~~~, fence lines included, an unclosed fence running
// to the end) and inline code spans (a backtick run closed by a run of the
// same length within the paragraph). The result is sorted and disjoint.
//
// It is deliberately lenient about where a fence may start (any indentation,
// inside a quote): treating too much as code only means a marker is left in
// place, while treating code as prose could corrupt what the user copies.
func codeSpans(s string) []span {
	var spans []span
	proseStart := 0
	for pos := 0; pos < len(s); {
		lineEnd, next := lineBounds(s, pos)
		ch, n, ok := fenceOpen(s[pos:lineEnd])
		if !ok {
			pos = next
			continue
		}
		spans = append(spans, inlineSpans(s, proseStart, pos)...)
		end := len(s)
		p := next
		for p < len(s) {
			le, nx := lineBounds(s, p)
			if fenceCloses(s[p:le], ch, n) {
				end = le
				break
			}
			p = nx
		}
		spans = append(spans, span{pos, end})
		proseStart = end
		pos = end
	}
	return append(spans, inlineSpans(s, proseStart, len(s))...)
}

// lineBounds returns the end of the line starting at pos (excluding the
// newline) and the start of the next line.
func lineBounds(s string, pos int) (lineEnd, next int) {
	if i := strings.IndexByte(s[pos:], '\n'); i >= 0 {
		return pos + i, pos + i + 1
	}
	return len(s), len(s)
}

// fenceOpen reports whether line opens a fenced code block, and with which
// character and run length.
func fenceOpen(line string) (ch byte, n int, ok bool) {
	t := strings.TrimLeft(line, " \t>")
	if t == "" || (t[0] != '`' && t[0] != '~') {
		return 0, 0, false
	}
	ch = t[0]
	for n < len(t) && t[n] == ch {
		n++
	}
	if n < 3 {
		return 0, 0, false
	}
	// A backtick "fence" followed by more backticks on the line is an
	// inline span such as ```code```, not a block.
	if ch == '`' && strings.IndexByte(t[n:], '`') >= 0 {
		return 0, 0, false
	}
	return ch, n, true
}

// fenceCloses reports whether line closes a block opened by n × ch.
func fenceCloses(line string, ch byte, n int) bool {
	t := strings.TrimLeft(line, " \t>")
	i := 0
	for i < len(t) && t[i] == ch {
		i++
	}
	return i >= n && strings.TrimSpace(t[i:]) == ""
}

// inlineSpans finds inline code spans in s[start:end], paragraph by
// paragraph: an unmatched backtick is literal and never reaches past a
// blank line.
func inlineSpans(s string, start, end int) []span {
	var spans []span
	for start < end {
		pEnd := paragraphEnd(s, start, end)
		spans = append(spans, inlineSpansIn(s, start, pEnd)...)
		start = pEnd
	}
	return spans
}

// paragraphEnd returns the end of the paragraph starting at start: just
// past the first blank line, or end.
func paragraphEnd(s string, start, end int) int {
	for pos := start; pos < end; {
		lineEnd, next := lineBounds(s, pos)
		lineEnd, next = min(lineEnd, end), min(next, end)
		if pos > start && strings.TrimSpace(s[pos:lineEnd]) == "" {
			return next
		}
		pos = next
	}
	return end
}

func inlineSpansIn(s string, start, end int) []span {
	var spans []span
	for i := start; i < end; {
		switch s[i] {
		case '\\':
			i += 2 // an escaped character, including a backtick, is literal
			continue
		case '`':
		default:
			i++
			continue
		}
		open := runEnd(s, i, end)
		n := open - i
		closeEnd := -1
		for k := open; k < end; {
			if s[k] != '`' {
				k++
				continue
			}
			m := runEnd(s, k, end)
			if m-k == n {
				closeEnd = m
				break
			}
			k = m
		}
		if closeEnd < 0 {
			i = open
			continue
		}
		spans = append(spans, span{i, closeEnd})
		i = closeEnd
	}
	return spans
}

func runEnd(s string, i, end int) int {
	for i < end && s[i] == '`' {
		i++
	}
	return i
}

// inSpans reports whether [start, end) overlaps any of spans.
func inSpans(spans []span, start, end int) bool {
	for _, sp := range spans {
		if start < sp.end && sp.start < end {
			return true
		}
	}
	return false
}

// floorOutside returns the end of the last span ending at or before pos
// (0 when none): trimming left from pos must stop there.
func floorOutside(spans []span, pos int) int {
	floor := 0
	for _, sp := range spans {
		if sp.end <= pos {
			floor = max(floor, sp.end)
		}
	}
	return floor
}

// ceilOutside returns the start of the first span starting at or after pos
// (len(s) when none): trimming right from pos must stop there.
func ceilOutside(spans []span, pos, n int) int {
	ceil := n
	for _, sp := range spans {
		if sp.start >= pos {
			ceil = min(ceil, sp.start)
		}
	}
	return ceil
}
