package platform

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// minSplitLimit keeps room for reopening and closing a code fence in every
// part; smaller limits are raised to it.
const minSplitLimit = 64

// SplitMessage splits text into parts of at most limit runes each, so that
// every platform's size limit can be met without losing text. It prefers to
// cut at a paragraph break, then at a line break, then at a space, and
// never leaves a fenced code block broken: a block that has to be cut is
// closed at the end of one part and reopened with the same fence and
// language at the start of the next, so each part renders on its own.
func SplitMessage(text string, limit int) []string {
	if limit < minSplitLimit {
		limit = minSplitLimit
	}
	if utf8.RuneCountInString(text) <= limit {
		return []string{text}
	}
	s := splitter{limit: limit}
	for _, line := range strings.SplitAfter(text, "\n") {
		for i, piece := range cutLongLine(line, limit/2) {
			s.add(piece, i > 0)
		}
	}
	s.flush(true)
	return s.parts
}

// line is one piece of a part, with the fence state after it.
type line struct {
	text    string
	runes   int
	inFence bool   // inside a fenced block after this line
	open    string // the fence's opening line (marker and language) when inFence
	cont    bool   // continues a line cut because it was too long
}

type splitter struct {
	limit int
	parts []string
	cur   []line
	size  int // runes in cur
	// fence state at the end of cur
	inFence bool
	open    string
}

// closing is the text that closes an open fence at the end of a part.
func closing(open string, endsWithNewline bool) string {
	marker := fenceMarker(open)
	if endsWithNewline {
		return marker
	}
	return "\n" + marker
}

// add appends piece; cont marks the continuation of a cut line, which is
// never a fence however it starts.
func (s *splitter) add(piece string, cont bool) {
	pr := utf8.RuneCountInString(piece)
	inFence, open := s.inFence, s.open
	if marker, lang, ok := fenceLine(piece); ok && !cont {
		switch {
		case !inFence:
			inFence, open = true, marker+lang
		case strings.HasPrefix(marker, fenceMarker(open)) && lang == "":
			inFence, open = false, ""
		}
	}
	overhead := 0
	if inFence {
		overhead = utf8.RuneCountInString(closing(open, strings.HasSuffix(piece, "\n")))
	}
	if s.size+pr+overhead > s.limit && s.hasContent() {
		s.flush(false)
	}
	s.cur = append(s.cur, line{text: piece, runes: pr, inFence: inFence, open: open, cont: cont})
	s.size += pr
	s.inFence, s.open = inFence, open
}

// hasContent reports whether cur holds more than a reopened fence line.
func (s *splitter) hasContent() bool {
	return len(s.cur) > 1 || (len(s.cur) == 1 && !s.cur[0].reopened())
}

func (l line) reopened() bool {
	_, _, ok := fenceLine(l.text)
	return ok && l.inFence
}

// flush emits cur as a part. Unless it is the last, it moves the text after
// the last paragraph break in cur's second half (outside code) to the next
// part, so parts end at natural boundaries.
func (s *splitter) flush(last bool) {
	if len(s.cur) == 0 {
		return
	}
	emit, carry := s.cur, []line(nil)
	if !last {
		seen := 0
		for i, l := range s.cur {
			seen += l.runes
			if i > 0 && i < len(s.cur)-1 && strings.TrimSpace(l.text) == "" && !l.inFence && seen >= s.limit/2 {
				emit, carry = s.cur[:i+1], s.cur[i+1:]
			}
		}
	}
	var b strings.Builder
	for _, l := range emit {
		b.WriteString(l.text)
	}
	end := emit[len(emit)-1]
	if end.inFence {
		b.WriteString(closing(end.open, strings.HasSuffix(end.text, "\n")))
	}
	if part := strings.TrimRight(b.String(), " \t\n"); strings.TrimSpace(part) != "" {
		s.parts = append(s.parts, part)
	}
	s.cur, s.size = nil, 0
	if end.inFence {
		reopen := end.open + "\n"
		s.cur = append(s.cur, line{text: reopen, runes: utf8.RuneCountInString(reopen), inFence: true, open: end.open})
		s.size = s.cur[0].runes
	}
	// Re-add carried lines so their fence state is recomputed from here.
	s.inFence, s.open = end.inFence, end.open
	if len(carry) > 0 {
		s.inFence, s.open = false, ""
		for _, l := range carry {
			s.add(l.text, l.cont)
		}
	}
}

// fenceLine reports whether l opens or closes a fenced code block, with the
// fence marker (``` or ~~~, possibly longer) and the info string.
func fenceLine(l string) (marker, lang string, ok bool) {
	t := strings.TrimSpace(l)
	for _, c := range []string{"```", "~~~"} {
		if strings.HasPrefix(t, c) {
			n := 0
			for n < len(t) && t[n] == c[0] {
				n++
			}
			return t[:n], strings.TrimSpace(t[n:]), true
		}
	}
	return "", "", false
}

func fenceMarker(open string) string {
	if open == "" {
		return "```"
	}
	n := 0
	for n < len(open) && open[n] == open[0] {
		n++
	}
	return open[:n]
}

// cutLongLine splits a line longer than max runes at spaces where it can,
// else at a rune boundary.
func cutLongLine(l string, max int) []string {
	if utf8.RuneCountInString(l) <= max {
		return []string{l}
	}
	var out []string
	for utf8.RuneCountInString(l) > max {
		// byte offset of the max-th rune
		cut, n := 0, 0
		for i := range l {
			if n == max {
				cut = i
				break
			}
			n++
		}
		if sp := strings.LastIndexByte(l[:cut], ' '); sp > cut/2 {
			cut = sp + 1
		}
		out = append(out, l[:cut])
		l = l[cut:]
	}
	if l != "" {
		out = append(out, l)
	}
	return out
}

// SplitMessageUTF16 splits text as SplitMessage does at limit runes, for
// platforms that count their size limit in UTF-16 code units (Discord,
// Telegram): a part heavy in emoji can be under limit runes and still over
// maxUnits units, so such a part is split again at half the limit, and
// again, down to floor runes, under which it is kept as it is.
func SplitMessageUTF16(text string, limit, maxUnits, floor int) []string {
	var out []string
	var fit func(s string, limit int)
	fit = func(s string, limit int) {
		for _, p := range SplitMessage(s, limit) {
			if utf16Len(p) <= maxUnits || limit <= floor {
				out = append(out, p)
				continue
			}
			fit(p, limit/2)
		}
	}
	fit(text, limit)
	return out
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
