package slack

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/cc-connect/cc-connect/platform"
)

// MessageLimit is the most runes one posted message carries. Slack accepts
// longer text but folds anything past about 4,000 characters behind "Show
// more" and truncates at 40,000; staying under 3,900 keeps every part whole
// on screen with room for the fences the splitter adds.
const MessageLimit = 3900

// splitMrkdwn splits Claude's Markdown into parts that are each valid Slack
// mrkdwn under limit runes. It splits the Markdown (so a code block is
// closed and reopened cleanly) and converts each part; escaping can make a
// converted part longer (& becomes &amp;), in which case that part of the
// Markdown is split again, smaller: cutting the mrkdwn itself could cut an
// escape in two, which Slack would show as text ("&l" "t;").
func splitMrkdwn(md string, limit int) []string {
	var out []string
	var fit func(md string, n int)
	fit = func(md string, n int) {
		for _, part := range platform.SplitMessage(md, n) {
			conv := ToMrkdwn(part)
			switch {
			case utf8.RuneCountInString(conv) <= limit:
				out = append(out, conv)
			case n > minMarkdownPart:
				fit(part, n/2)
			default:
				// A part this small that still grew past the limit
				// (a padded table cell, a run of escapes): split the
				// mrkdwn itself, which keeps the promise of the limit
				// at the cost of an escape possibly cut in two.
				out = append(out, platform.SplitMessage(conv, limit)...)
			}
		}
	}
	fit(md, limit)
	return out
}

// minMarkdownPart ends splitMrkdwn's halving: below it a Markdown part that
// still converts to more than the limit is split as mrkdwn.
const minMarkdownPart = 16

// ToMrkdwn converts the Markdown Claude writes into Slack mrkdwn: bold,
// italics, strike-through, links, lists and headings in Slack's syntax;
// tables as aligned code blocks (Slack has no tables); code blocks and
// inline code free of any formatting. &, < and > are escaped everywhere,
// code included: Slack applies the same escaping to all message text (its
// own clients send code as &lt; too, and show it as <), and unescaped they
// could form a control sequence such as <!channel> or a link. A Markdown
// link becomes a Slack link only to a web or mail address: Slack reads a
// link to "!channel", "@U0123" or "#C0123" as a mention, so those stay
// text. Nothing Claude writes can make a mention.
func ToMrkdwn(md string) string {
	md = strings.Map(keepOutOfPlaceholders, md)
	lines := strings.Split(md, "\n")
	out := make([]string, 0, len(lines))
	fence := "" // the open fence marker, "" outside a code block
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				out = append(out, "```")
				fence = ""
				continue
			}
			out = append(out, breakFences(escapeText(l)))
			continue
		}
		if m := fenceOpenRE.FindStringSubmatch(t); m != nil {
			// Slack has no syntax highlighting: an info string would show
			// up as the first line of the block, so it is dropped.
			fence = m[1]
			out = append(out, "```")
			continue
		}
		if n := tableRows(lines[i:]); n > 0 {
			out = append(out, renderTable(lines[i:i+n])...)
			i += n - 1
			continue
		}
		out = append(out, convertLine(l))
	}
	if fence != "" {
		// An unterminated block (a truncated reply) still renders as code.
		out = append(out, "```")
	}
	return strings.Join(out, "\n")
}

var (
	fenceOpenRE   = regexp.MustCompile("^(`{3,}|~{3,})\\s*[^`]*$")
	headingRE     = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	ruleRE        = regexp.MustCompile(`^\s{0,3}([-*_])(\s*[-*_]){2,}\s*$`)
	quoteRE       = regexp.MustCompile(`^\s{0,3}>+\s?(.*)$`)
	bulletRE      = regexp.MustCompile(`^(\s*)[-*+]\s+(.*)$`)
	taskRE        = regexp.MustCompile(`^\[([ xX])\]\s+(.*)$`)
	orderedRE     = regexp.MustCompile(`^(\s*)(\d{1,9})([.)])\s+(.*)$`)
	tableSepRE    = regexp.MustCompile(`^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$`)
	linkRE        = regexp.MustCompile(`!?\[([^\[\]]*)\]\(\s*<?([^\s()<>]+(?:\([^\s()<>]*\))?[^\s()<>]*)>?(?:\s+"[^"]*")?\s*\)`)
	autolinkRE    = regexp.MustCompile(`<((?:https?|mailto|ftp):[^\s<>]+)>`)
	boldItalicRE  = regexp.MustCompile(`\*\*\*(\S(?:.*?\S)?)\*\*\*`)
	boldStarRE    = regexp.MustCompile(`\*\*(\S(?:.*?\S)?)\*\*`)
	boldUnderRE   = regexp.MustCompile(`(^|[^\w])__(\S(?:.*?\S)?)__([^\w]|$)`)
	italicStarRE  = regexp.MustCompile(`(^|[^\w*])\*(\S(?:[^*]*?\S)?)\*([^\w*]|$)`)
	strikeRE      = regexp.MustCompile(`~~(\S(?:.*?\S)?)~~`)
	emphMarkersRE = regexp.MustCompile(`\*\*|__|~~`)
)

// convertLine converts one line outside code blocks and tables.
func convertLine(l string) string {
	if strings.TrimSpace(l) == "" {
		return ""
	}
	if m := headingRE.FindStringSubmatch(l); m != nil {
		// A heading becomes a bold line; emphasis inside it would nest
		// asterisks, which Slack renders literally.
		text := emphMarkersRE.ReplaceAllString(m[1], "")
		if text == "" {
			return ""
		}
		return "*" + convertInline(text) + "*"
	}
	if ruleRE.MatchString(l) {
		return "──────────"
	}
	if m := quoteRE.FindStringSubmatch(l); m != nil {
		return ">" + " " + convertInline(m[1])
	}
	if m := bulletRE.FindStringSubmatch(l); m != nil {
		indent, item := m[1], m[2]
		if t := taskRE.FindStringSubmatch(item); t != nil {
			box := "☐"
			if t[1] != " " {
				box = "☑"
			}
			return indent + box + " " + convertInline(t[2])
		}
		return indent + "• " + convertInline(item)
	}
	if m := orderedRE.FindStringSubmatch(l); m != nil {
		return m[1] + m[2] + m[3] + " " + convertInline(m[4])
	}
	return convertInline(l)
}

// convertInline converts inline Markdown. Code spans and links are lifted
// out first (their content must not be escaped or re-emphasised), the rest
// is escaped, emphasis is rewritten, and the lifted pieces are put back.
func convertInline(s string) string {
	var held []string
	hold := func(v string) string {
		held = append(held, v)
		return string(rune(placeholderBase + len(held) - 1))
	}

	// The guards skip patterns that cannot match: most lines have no
	// markup at all, and regexp passes are the cost of conversion.
	s = liftCodeSpans(s, hold)
	if strings.Contains(s, "](") {
		s = linkRE.ReplaceAllStringFunc(s, func(m string) string {
			sub := linkRE.FindStringSubmatch(m)
			label := strings.TrimSpace(emphMarkersRE.ReplaceAllString(sub[1], ""))
			if !linkable(sub[2]) {
				if label == "" || label == sub[2] {
					return hold(escapeText(sub[2]))
				}
				return hold(escapeText(label + " (" + sub[2] + ")"))
			}
			url := escapeURL(sub[2])
			if label == "" || label == sub[2] {
				return hold("<" + url + ">")
			}
			return hold("<" + url + "|" + escapeText(label) + ">")
		})
	}
	if strings.Contains(s, "<") {
		// autolinkRE matches web, mail and FTP addresses only.
		s = autolinkRE.ReplaceAllStringFunc(s, func(m string) string {
			return hold("<" + escapeURL(m[1:len(m)-1]) + ">")
		})
	}

	s = escapeText(s)
	if strings.Contains(s, "**") {
		s = boldItalicRE.ReplaceAllString(s, boldMark+"_${1}_"+boldMark)
		s = boldStarRE.ReplaceAllString(s, boldMark+"${1}"+boldMark)
	}
	// These two patterns consume the character on each side of a match, so
	// a second pass catches neighbours that shared it ("*a* *b*").
	for range 2 {
		if strings.Contains(s, "__") {
			s = boldUnderRE.ReplaceAllString(s, "${1}"+boldMark+"${2}"+boldMark+"${3}")
		}
		if strings.Contains(s, "*") {
			s = italicStarRE.ReplaceAllString(s, "${1}_${2}_${3}")
		}
	}
	if strings.Contains(s, "~~") {
		s = strikeRE.ReplaceAllString(s, "~${1}~")
	}
	s = strings.ReplaceAll(s, boldMark, "*")

	if len(held) == 0 {
		return s
	}
	var b strings.Builder
	restoreHeld(&b, s, held)
	return b.String()
}

// restoreHeld writes s with each placeholder replaced by what it holds. A
// held piece may itself hold a placeholder (a link whose target was a code
// span), which is restored in turn; a piece only ever holds earlier ones.
func restoreHeld(b *strings.Builder, s string, held []string) {
	for _, r := range s {
		if i := int(r) - placeholderBase; i >= 0 && i < len(held) {
			restoreHeld(b, held[i], held[:i])
			continue
		}
		b.WriteRune(r)
	}
}

// linkable reports whether a link target may become a Slack link: a web,
// mail or FTP address. Anything else ("!here", "@U0123", "#C0123",
// "!subteam^S1") would be a control sequence.
func linkable(target string) bool {
	t := strings.ToLower(target)
	for _, scheme := range []string{"https://", "http://", "mailto:", "ftp://"} {
		if strings.HasPrefix(t, scheme) && len(t) > len(scheme) {
			return true
		}
	}
	return false
}

// keepOutOfPlaceholders replaces the private-use code points conversion
// uses (placeholders and boldMark) where Claude's text holds them, so that
// they cannot be read as a held link or marker.
func keepOutOfPlaceholders(r rune) rune {
	if r >= placeholderBase && r <= 0xFFFFD {
		return '\uFFFD'
	}
	return r
}

const (
	// placeholderBase is the first of the Unicode private-use code points
	// that stand in for lifted code spans and links during conversion.
	placeholderBase = 0xF0000
	// boldMark stands for a converted bold marker until single-asterisk
	// italics have been rewritten, so *bold* is not read as italics.
	boldMark = "\U000FFFFD"
)

// liftCodeSpans replaces each inline code span with a placeholder holding
// the span in Slack's single-backtick form. An unmatched backtick run is
// ordinary text.
func liftCodeSpans(s string, hold func(string) string) string {
	if !strings.Contains(s, "`") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '`' {
			b.WriteByte(s[i])
			i++
			continue
		}
		n := 0
		for i+n < len(s) && s[i+n] == '`' {
			n++
		}
		run := s[i : i+n]
		end := findRun(s[i+n:], n)
		if end < 0 {
			b.WriteString(run)
			i += n
			continue
		}
		content := s[i+n : i+n+end]
		if n > 1 {
			// Slack only knows single-backtick spans; CommonMark's padding
			// around a span that starts or ends with a backtick goes too.
			if t := strings.TrimSpace(content); !strings.Contains(t, "`") {
				content = t
				run = "`"
			}
		}
		b.WriteString(hold(breakFences(run + escapeText(content) + run)))
		i += n + end + n
	}
	return b.String()
}

// findRun returns the offset in s of the next run of exactly n backticks, or
// -1.
func findRun(s string, n int) int {
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		if j-i == n {
			return i
		}
		i = j
	}
	return -1
}

// breakFences puts a zero-width space between the backticks of every run
// of three or more in code: Slack ends a code block at the first ``` it
// finds, even inside, and does not honour a longer fence, so a run the
// code holds would end the block early and show the rest as formatting.
// The backticks all stay in sight.
func breakFences(s string) string {
	if !strings.Contains(s, "```") {
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

const zeroWidthSpace = "\u200b"

var textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escapeText escapes the three characters Slack reserves for control
// sequences.
func escapeText(s string) string { return textEscaper.Replace(s) }

var urlEscaper = strings.NewReplacer("&", "&amp;", "<", "%3C", ">", "%3E", "|", "%7C")

// escapeURL makes a URL safe inside <url|label>: a "|" or ">" would end it.
func escapeURL(u string) string { return urlEscaper.Replace(u) }

// tableRows returns how many lines starting at lines[0] form a Markdown
// table (a header row, a separator row, then rows), or 0.
func tableRows(lines []string) int {
	if len(lines) < 2 || !isTableRow(lines[0]) || !tableSepRE.MatchString(lines[1]) || !strings.Contains(lines[1], "|") {
		return 0
	}
	n := 2
	for n < len(lines) && isTableRow(lines[n]) {
		n++
	}
	return n
}

func isTableRow(l string) bool {
	t := strings.TrimSpace(l)
	return strings.Count(t, "|") >= 1 && (strings.HasPrefix(t, "|") || strings.HasSuffix(t, "|"))
}

// renderTable turns a Markdown table into a code block with padded
// columns: Slack has no tables, and monospace keeps the columns aligned.
func renderTable(lines []string) []string {
	var rows [][]string
	var widths []int
	for i, l := range lines {
		if i == 1 {
			continue // the separator row, redrawn below
		}
		cells := splitCells(l)
		for j, c := range cells {
			if j >= len(widths) {
				widths = append(widths, 0)
			}
			widths[j] = max(widths[j], utf8.RuneCountInString(c))
		}
		rows = append(rows, cells)
	}
	render := func(cells []string) string {
		var b strings.Builder
		for j := range widths {
			c := ""
			if j < len(cells) {
				c = cells[j]
			}
			if j > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(c)
			if j < len(widths)-1 {
				b.WriteString(strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c)))
			}
		}
		return strings.TrimRight(b.String(), " ")
	}
	out := []string{"```", breakFences(escapeText(render(rows[0])))}
	var sep []string
	for _, w := range widths {
		sep = append(sep, strings.Repeat("-", w))
	}
	out = append(out, strings.Join(sep, "-|-"))
	for _, r := range rows[1:] {
		out = append(out, breakFences(escapeText(render(r))))
	}
	return append(out, "```")
}

// splitCells splits a table row into trimmed cells, honouring \| escapes
// and dropping the Markdown inline markers that code blocks would show.
func splitCells(l string) []string {
	t := strings.TrimSpace(l)
	t = strings.TrimPrefix(t, "|")
	if strings.HasSuffix(t, "|") && !strings.HasSuffix(t, `\|`) {
		t = t[:len(t)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(t); i++ {
		switch {
		case t[i] == '\\' && i+1 < len(t) && t[i+1] == '|':
			cur.WriteByte('|')
			i++
		case t[i] == '|':
			cells = append(cells, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(t[i])
		}
	}
	cells = append(cells, cur.String())
	for i, c := range cells {
		c = emphMarkersRE.ReplaceAllString(strings.TrimSpace(c), "")
		if len(c) >= 2 && c[0] == '`' && c[len(c)-1] == '`' {
			c = c[1 : len(c)-1]
		}
		cells[i] = c
	}
	return cells
}

var (
	slackLinkRE = regexp.MustCompile(`<([^<>|]+)(?:\|([^<>]*))?>`)
	mentionRE   = regexp.MustCompile(`<@([A-Z0-9]+)(?:\|[^<>]*)?> ?`)
	unescaper   = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")
)

// plainText turns the mrkdwn of an inbound Slack message into the text
// Claude gets: the bot's own mention removed, links, channel and special
// mentions spelled out, and Slack's escapes undone. Other users' mentions
// stay as <@U…> so the reader can still tell who was meant.
func plainText(s, botUserID string) string {
	leading := false
	if botUserID != "" {
		if loc := mentionRE.FindStringSubmatchIndex(s); loc != nil && strings.TrimSpace(s[:loc[0]]) == "" && s[loc[2]:loc[3]] == botUserID {
			leading = true
		}
		s = mentionRE.ReplaceAllStringFunc(s, func(m string) string {
			if mentionRE.FindStringSubmatch(m)[1] == botUserID {
				return ""
			}
			return m
		})
	}
	s = slackLinkRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := slackLinkRE.FindStringSubmatch(m)
		target, label := sub[1], sub[2]
		switch {
		case strings.HasPrefix(target, "@"):
			return "<" + target + ">"
		case strings.HasPrefix(target, "#"):
			if label != "" {
				return "#" + label
			}
			return "<" + target + ">"
		case strings.HasPrefix(target, "!"):
			if label != "" {
				return label
			}
			name, _, _ := strings.Cut(target[1:], "^")
			return "@" + name
		}
		if label == "" || label == target || label == strings.TrimPrefix(strings.TrimPrefix(target, "mailto:"), "https://") || label == strings.TrimPrefix(target, "http://") {
			return strings.TrimPrefix(target, "mailto:")
		}
		return label + " (" + target + ")"
	})
	s = strings.TrimSpace(unescaper.Replace(s))
	if leading {
		// "@bot: do this" and "@bot, do this" address the bot; the
		// punctuation belonged to the mention.
		s = strings.TrimLeft(s, ",:; ")
	}
	return s
}
