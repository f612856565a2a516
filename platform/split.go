package platform

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// minSplitLimit keeps room for reopening and closing a code fence in every
// part; smaller limits are raised to it.
const minSplitLimit = 64

// Why no part is ever over the limit: every piece added is at most limit/2
// runes (longer lines are cut), the fence a part reopens is at most
// limit/4+1 runes (a longer info string is dropped from the reopened fence)
// and the one it closes with at most limit/8+1 (a longer marker is not
// taken for a fence). A piece that does not fit ends the part before it;
// alone after a reopened fence it takes at most 7/8 of the limit plus 2.

// SplitMessage splits text into parts of at most limit runes each, so that
// every platform's size limit can be met without losing text; no part is
// ever over the limit, whatever the text. It prefers to cut at a paragraph
// break, then at a line break, then at a space, and never leaves a fenced
// code block broken: a block that has to be cut is closed at the end of one
// part and reopened with the same fence and language at the start of the
// next, so each part renders on its own. (A fence whose marker is over an
// eighth of the limit is treated as text, and an info string too long to
// repeat is left off the reopened fence.)
func SplitMessage(text string, limit int) []string {
	parts, _ := split(text, limit)
	return parts
}

// split is SplitMessage, also returning each part's body: the part without
// the fences the splitter added to reopen and close a cut code block.
// Together the bodies hold the text, whitespace aside.
func split(text string, limit int) (parts, bodies []string) {
	if limit < minSplitLimit {
		limit = minSplitLimit
	}
	if utf8.RuneCountInString(text) <= limit {
		return []string{text}, []string{text}
	}
	s := splitter{limit: limit}
	for _, line := range strings.SplitAfter(text, "\n") {
		for i, piece := range cutLongLine(line, limit/2) {
			s.add(piece, i > 0)
		}
	}
	s.flush(true)
	return s.parts, s.bodies
}

// line is one piece of a part, with the fence state after it.
type line struct {
	text    string
	runes   int
	inFence bool   // inside a fenced block after this line
	open    string // the fence's opening line (marker and language) when inFence
	cont    bool   // continues a line cut because it was too long
	reopen  bool   // the fence a part reopens, not text of the message
}

type splitter struct {
	limit  int
	parts  []string
	bodies []string // the parts without the fences added to them
	cur    []line
	size   int // runes in cur
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
// never a fence however it starts. While the piece (and the fence closing
// the part after it) does not fit, the part so far is emitted first; the
// fence state is then worked out again from what the new part holds.
func (s *splitter) add(piece string, cont bool) {
	pr := utf8.RuneCountInString(piece)
	for {
		inFence, open := s.fenceAfter(piece, cont)
		overhead := 0
		if inFence {
			overhead = utf8.RuneCountInString(closing(open, strings.HasSuffix(piece, "\n")))
		}
		if s.size+pr+overhead <= s.limit || !s.hasContent() {
			s.cur = append(s.cur, line{text: piece, runes: pr, inFence: inFence, open: open, cont: cont})
			s.size += pr
			s.inFence, s.open = inFence, open
			return
		}
		s.flush(false)
	}
}

// fenceAfter is the fence state once piece follows what cur holds.
func (s *splitter) fenceAfter(piece string, cont bool) (inFence bool, open string) {
	inFence, open = s.inFence, s.open
	marker, lang, ok := fenceLine(piece)
	if !ok || cont {
		return inFence, open
	}
	switch {
	case !inFence && utf8.RuneCountInString(marker) <= s.limit/8:
		open = marker + lang
		if utf8.RuneCountInString(open) > s.limit/4 {
			open = marker // reopened without its info string
		}
		return true, open
	case inFence && strings.HasPrefix(marker, fenceMarker(open)) && lang == "":
		return false, ""
	}
	return inFence, open
}

// hasContent reports whether cur holds more than a reopened fence line.
func (s *splitter) hasContent() bool {
	return len(s.cur) > 1 || (len(s.cur) == 1 && !s.cur[0].reopen)
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
	var b, body strings.Builder
	for _, l := range emit {
		b.WriteString(l.text)
		if !l.reopen {
			body.WriteString(l.text)
		}
	}
	end := emit[len(emit)-1]
	if end.inFence {
		b.WriteString(closing(end.open, strings.HasSuffix(end.text, "\n")))
	}
	// A part that would hold only the fences added to it (a reopened code
	// block with nothing but blank lines yet) is not posted.
	if strings.TrimSpace(body.String()) != "" {
		s.parts = append(s.parts, strings.TrimRight(b.String(), " \t\n"))
		s.bodies = append(s.bodies, body.String())
	}
	s.cur, s.size = nil, 0
	if end.inFence {
		reopen := end.open + "\n"
		s.cur = append(s.cur, line{text: reopen, runes: utf8.RuneCountInString(reopen), inFence: true, open: end.open, reopen: true})
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
// again. A rune is at most two units, so the halving ends by the time the
// limit is half of maxUnits: no part is over maxUnits units, provided
// maxUnits is at least 2*minSplitLimit (128).
func SplitMessageUTF16(text string, limit, maxUnits int) []string {
	var out []string
	var fit func(s string, limit int)
	fit = func(s string, limit int) {
		for _, p := range SplitMessage(s, limit) {
			if utf16Len(p) <= maxUnits || limit <= minSplitLimit {
				out = append(out, p)
				continue
			}
			fit(p, max(limit/2, minSplitLimit))
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
