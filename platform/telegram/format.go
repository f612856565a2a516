package telegram

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cc-connect/cc-connect/platform"
)

// messageLimit is Telegram's limit on one message's text (after entity
// parsing, counted in UTF-16 code units).
const messageLimit = 4096

// splitLimit leaves room under messageLimit for the fences SplitMessage
// adds when it cuts a code block.
const splitLimit = 4000

// splitForTelegram splits Markdown text into parts that each fit in one
// Telegram message. SplitMessage counts runes; Telegram counts UTF-16 units,
// so a part heavy in emoji is split again with a smaller limit.
func splitForTelegram(text string) []string {
	return platform.SplitMessageUTF16(text, splitLimit, messageLimit)
}

// toHTML renders the Markdown that Claude Code writes as Telegram HTML:
// fenced code as <pre><code class="language-x">, inline code, bold,
// italic, strikethrough, links, headings as bold lines and bullets. Anything
// it does not recognise stays literal text, escaped, so the output is always
// well-formed; Telegram's remaining refusals are handled by the plain-text
// fallback in Send.
func toHTML(md string) string {
	var b strings.Builder
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if marker, lang, ok := openFence(line); ok {
			var code []string
			j := i + 1
			for ; j < len(lines); j++ {
				if closesFence(lines[j], marker) {
					break
				}
				code = append(code, lines[j])
			}
			writeCode(&b, lang, strings.Join(code, "\n"))
			i = j // the closing fence (or the end)
			if i < len(lines)-1 {
				b.WriteByte('\n')
			}
			continue
		}
		b.WriteString(blockLine(line))
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func writeCode(b *strings.Builder, lang, code string) {
	if lang != "" {
		b.WriteString(`<pre><code class="language-` + escapeAttr(lang) + `">`)
		b.WriteString(escapeHTML(code))
		b.WriteString("</code></pre>")
		return
	}
	b.WriteString("<pre>")
	b.WriteString(escapeHTML(code))
	b.WriteString("</pre>")
}

// openFence reports whether line opens a fenced code block (``` or ~~~, up
// to three spaces of indent) and returns the fence and the language.
func openFence(line string) (marker, lang string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 {
		return "", "", false
	}
	c := t[0]
	if c != '`' && c != '~' {
		return "", "", false
	}
	n := 0
	for n < len(t) && t[n] == c {
		n++
	}
	if n < 3 {
		return "", "", false
	}
	info := strings.TrimSpace(t[n:])
	if c == '`' && strings.Contains(info, "`") {
		return "", "", false
	}
	if f := strings.Fields(info); len(f) > 0 {
		lang = f[0]
	}
	return t[:n], lang, true
}

func closesFence(line, marker string) bool {
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, marker) {
		return false
	}
	return strings.Trim(t, string(marker[0])) == ""
}

// blockLine renders one line outside code: headings become bold, list
// bullets become "•", the rest is inline Markdown.
func blockLine(line string) string {
	t := strings.TrimLeft(line, " ")
	indent := line[:len(line)-len(t)]
	if h := headingText(t); h != "" {
		return indent + "<b>" + inline(h) + "</b>"
	}
	if len(t) >= 2 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && t[1] == ' ' {
		return indent + "• " + inline(t[2:])
	}
	return indent + inline(t)
}

func headingText(t string) string {
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(t) || t[n] != ' ' {
		return ""
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t[n:]), "#"))
}

// inline renders inline Markdown in s as Telegram HTML.
func inline(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case '`':
			n := run(s, i, '`')
			if end := strings.Index(s[i+n:], s[i:i+n]); end >= 0 {
				code := s[i+n : i+n+end]
				if len(code) > 2 && code[0] == ' ' && code[len(code)-1] == ' ' {
					code = code[1 : len(code)-1]
				}
				b.WriteString("<code>" + escapeHTML(code) + "</code>")
				i += n + end + n
				continue
			}
			b.WriteString(s[i : i+n])
			i += n
			continue
		case '*', '_':
			if n := run(s, i, c); n >= 2 {
				if end, ok := findClose(s, i+2, s[i:i+2], c); ok {
					b.WriteString("<b>" + inline(s[i+2:end]) + "</b>")
					i = end + 2
					continue
				}
				b.WriteString(s[i : i+n])
				i += n
				continue
			}
			if end, ok := findClose(s, i+1, s[i:i+1], c); ok && canOpen(s, i, c) {
				b.WriteString("<i>" + inline(s[i+1:end]) + "</i>")
				i = end + 1
				continue
			}
		case '~':
			if strings.HasPrefix(s[i:], "~~") {
				if end, ok := findClose(s, i+2, "~~", c); ok {
					b.WriteString("<s>" + inline(s[i+2:end]) + "</s>")
					i = end + 2
					continue
				}
			}
		case '[':
			if text, href, n, ok := link(s[i:]); ok {
				b.WriteString(`<a href="` + escapeAttr(href) + `">` + inline(text) + "</a>")
				i += n
				continue
			}
		case '@':
			if startsMention(s, i) {
				b.WriteString("@" + wordJoiner)
				i++
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteString(escapeHTML(string(r)))
		i += size
	}
	return b.String()
}

// run counts repeats of c starting at s[i].
func run(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// canOpen keeps snake_case and "a * b" literal: an emphasis marker must not
// be followed by a space, and "_" must not sit inside a word.
func canOpen(s string, i int, c byte) bool {
	if i+1 >= len(s) || s[i+1] == ' ' {
		return false
	}
	if c == '_' && i > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:i])
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// findClose finds the closing delimiter for an emphasis opened before
// start: non-empty content, not preceded by a space, and for "_" not
// followed by a word character.
func findClose(s string, start int, delim string, c byte) (int, bool) {
	if start >= len(s) || s[start] == ' ' {
		return 0, false
	}
	for j := start + 1; j+len(delim) <= len(s); j++ {
		if s[j] == '`' { // code spans bind tighter than emphasis
			n := run(s, j, '`')
			if end := strings.Index(s[j+n:], s[j:j+n]); end >= 0 {
				j += n + end + n - 1
				continue
			}
		}
		if s[j:j+len(delim)] != delim || s[j-1] == ' ' {
			continue
		}
		after := j + len(delim)
		if after < len(s) && s[after] == c {
			continue // part of a longer run, e.g. ** inside *...*
		}
		if c == '_' && after < len(s) {
			r, _ := utf8.DecodeRuneInString(s[after:])
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				continue
			}
		}
		return j, true
	}
	return 0, false
}

// link parses "[text](href)" at the start of s for http(s) and mailto
// links.
func link(s string) (text, href string, n int, ok bool) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
			if depth != 0 {
				continue
			}
			if i+1 >= len(s) || s[i+1] != '(' {
				return "", "", 0, false
			}
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				return "", "", 0, false
			}
			href = strings.TrimSpace(s[i+2 : i+2+end])
			if !safeHref(href) || i == 1 {
				return "", "", 0, false
			}
			return s[1:i], href, i + 2 + end + 1, true
		case '\n':
			return "", "", 0, false
		}
	}
	return "", "", 0, false
}

func safeHref(h string) bool {
	l := strings.ToLower(h)
	if strings.ContainsAny(h, " \t\n") {
		return false
	}
	// No tg:// links: <a href="tg://user?id=…"> is how Telegram makes a
	// text mention, which notifies that user.
	for _, p := range []string{"http://", "https://", "mailto:"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

var attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func escapeHTML(s string) string { return htmlEscaper.Replace(s) }

func escapeAttr(s string) string { return attrEscaper.Replace(s) }

// htmlTextLen is the length Telegram counts for a message sent as HTML: the
// text without its tags, each entity one character, in UTF-16 units.
func htmlTextLen(html string) int {
	n := 0
	for i := 0; i < len(html); {
		switch html[i] {
		case '<':
			if j := strings.IndexByte(html[i:], '>'); j >= 0 {
				i += j + 1
				continue
			}
		case '&':
			if j := strings.IndexByte(html[i:], ';'); j >= 0 {
				n++
				i += j + 1
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(html[i:])
		n += utf16.RuneLen(r)
		i += size
	}
	return n
}

// wordJoiner is an invisible character that ends a word: put after an "@",
// it keeps Telegram from reading "@name" as a mention, and the text reads
// the same.
const wordJoiner = "\u2060"

// startsMention reports whether the "@" at s[i] may start what Telegram
// finds as a mention by itself in any text: "@" then a username character,
// not right after an ASCII word character (as in an email address, which
// is not a mention). Erring on the side of a mention costs only an
// invisible character.
func startsMention(s string, i int) bool {
	if i+1 >= len(s) || !usernameByte(s[i+1]) {
		return false
	}
	return i == 0 || !usernameByte(s[i-1])
}

func usernameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// noMentions makes text for a message sent without formatting (where
// Telegram finds mentions even in what was code) mention nobody.
func noMentions(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if s[i] == '@' && startsMention(s, i) {
			b.WriteString(wordJoiner)
		}
	}
	return b.String()
}
