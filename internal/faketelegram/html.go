package faketelegram

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// htmlTags are the tags Telegram's HTML parse mode supports.
var htmlTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "span": true, "tg-spoiler": true,
	"a": true, "code": true, "pre": true, "blockquote": true, "tg-emoji": true,
}

// mentionRE is an @username as Telegram finds it in any message text: an
// @ that does not follow a word character (so not an email address).
var mentionRE = regexp.MustCompile(`(?:^|[^\w@])@(\w+)`)

// Parse reads text as Telegram does under parseMode ("" for plain text, or
// "HTML") and returns the text it shows and the mentions it makes, that is
// whom the message notifies: "@name" for each username Telegram finds
// outside code and pre (in plain text too), and the href of each text
// mention (<a href="tg://user?id=…">). err is Telegram's refusal, as its
// description goes on after "Bad Request: " ("can't parse entities: …").
func Parse(text, parseMode string) (shown string, mentions []string, err error) {
	switch strings.ToLower(parseMode) {
	case "":
		return text, findMentions(text, nil), nil
	case "html":
		p, err := parseHTML(text)
		if err != nil {
			return "", nil, fmt.Errorf("can't parse entities: %w", err)
		}
		return p.text, append(p.textMentions, findMentions(p.text, p.code)...), nil
	default:
		return "", nil, errors.New("unsupported parse_mode")
	}
}

// findMentions returns the @usernames in text that lie wholly outside the
// byte ranges of code (pairs of start and end), where Telegram finds none.
func findMentions(text string, code [][2]int) []string {
	var out []string
	for _, m := range mentionRE.FindAllStringSubmatchIndex(text, -1) {
		at, end := m[2]-1, m[3]
		inCode := false
		for _, c := range code {
			inCode = inCode || (at < c[1] && c[0] < end)
		}
		if !inCode {
			out = append(out, "@"+text[m[2]:m[3]])
		}
	}
	return out
}

// parsedHTML is a message's HTML as Telegram reads it.
type parsedHTML struct {
	text string
	// code are the byte ranges of text inside <code> or <pre>.
	code [][2]int
	// textMentions are the hrefs of links that are text mentions.
	textMentions []string
}

// parseHTML reads text in Telegram's HTML parse mode, or returns the error
// Telegram reports after "can't parse entities:" (byte offsets into text,
// as Telegram gives them; the messages keep Telegram's capitals).
func parseHTML(text string) (parsedHTML, error) {
	var (
		out       strings.Builder
		p         parsedHTML
		open      []string
		i         int
		chunk     int // start of the text not yet copied
		inCode    int // depth of the open code and pre tags
		codeStart int
	)
	flush := func(end int) {
		out.WriteString(decodeEntities(text[chunk:end]))
	}
	for i < len(text) {
		if text[i] != '<' {
			i++
			continue
		}
		flush(i)
		start := i
		// The tag name runs to a space or ">"; Telegram names it in its
		// refusal before it looks for the end of the tag.
		rest := text[i+1:]
		nameEnd := strings.IndexAny(rest, " \t\n>")
		if nameEnd < 0 {
			nameEnd = len(rest)
		}
		name := strings.ToLower(rest[:nameEnd])
		closing := strings.HasPrefix(name, "/")
		if !htmlTags[strings.TrimPrefix(name, "/")] {
			if closing {
				return parsedHTML{}, fmt.Errorf("Unexpected end tag at byte offset %d", start)
			}
			return parsedHTML{}, fmt.Errorf("Unsupported start tag \"%s\" at byte offset %d", name, start)
		}
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			return parsedHTML{}, fmt.Errorf("Unclosed start tag at byte offset %d", start)
		}
		attrs := strings.TrimSpace(rest[nameEnd:end])
		i += end + 2
		chunk = i
		if closing {
			name = name[1:]
			if len(open) == 0 {
				return parsedHTML{}, fmt.Errorf("Unexpected end tag at byte offset %d", start)
			}
			if want := open[len(open)-1]; name != want {
				return parsedHTML{}, fmt.Errorf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", start, want, name)
			}
			open = open[:len(open)-1]
			if name == "code" || name == "pre" {
				if inCode--; inCode == 0 {
					p.code = append(p.code, [2]int{codeStart, out.Len()})
				}
			}
			continue
		}
		if err := checkAttrs(name, attrs, start); err != nil {
			return parsedHTML{}, err
		}
		open = append(open, name)
		switch name {
		case "code", "pre":
			if inCode++; inCode == 1 {
				codeStart = out.Len()
			}
		case "a":
			if href := attrValue(attrs, "href"); strings.HasPrefix(strings.ToLower(href), "tg://user") {
				p.textMentions = append(p.textMentions, href)
			}
		}
	}
	flush(len(text))
	if len(open) > 0 {
		return parsedHTML{}, fmt.Errorf("Can't find end tag corresponding to start tag \"%s\"", open[len(open)-1])
	}
	p.text = out.String()
	return p, nil
}

// checkAttrs refuses the attribute shapes Telegram refuses: a link without
// href, a span that is not a spoiler.
func checkAttrs(name, attrs string, at int) error {
	attrs = strings.TrimSpace(attrs)
	switch name {
	case "a":
		if !strings.HasPrefix(attrs, "href=") {
			return fmt.Errorf("Expected href attribute in tag \"a\" at byte offset %d", at)
		}
	case "span":
		if attrs != `class="tg-spoiler"` {
			return fmt.Errorf("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", at)
		}
	case "code", "pre", "blockquote":
		if attrs != "" && !strings.HasPrefix(attrs, "class=") && attrs != "expandable" {
			return errors.New("Unsupported attribute in tag \"" + name + "\"")
		}
	}
	return nil
}

// attrValue returns the value of the attribute key in attrs (quoted with "
// or ', or bare up to a space), its entities decoded.
func attrValue(attrs, key string) string {
	for attrs != "" {
		k, rest, ok := strings.Cut(attrs, "=")
		if !ok {
			return ""
		}
		var v string
		switch {
		case rest == "":
		case rest[0] == '"' || rest[0] == '\'':
			end := strings.IndexByte(rest[1:], rest[0])
			if end < 0 {
				end = len(rest) - 1
			}
			v, rest = rest[1:1+end], rest[min(len(rest), end+2):]
		default:
			end := strings.IndexAny(rest, " \t\n")
			if end < 0 {
				end = len(rest)
			}
			v, rest = rest[:end], rest[end:]
		}
		if strings.EqualFold(strings.TrimSpace(k), key) {
			return decodeEntities(v)
		}
		attrs = strings.TrimSpace(rest)
	}
	return ""
}

// decodeEntities decodes the character references Telegram knows: every
// numeric one and the named &lt;, &gt;, &amp; and &quot; (the ";" may be
// left out). Any other "&" stays as written, as on Telegram.
func decodeEntities(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '&' {
			b.WriteByte(s[i])
			i++
			continue
		}
		r, n := decodeEntity(s[i:])
		if n == 0 {
			b.WriteByte('&')
			i++
			continue
		}
		b.WriteRune(r)
		i += n
	}
	return b.String()
}

// decodeEntity decodes the reference at the start of s ("&…") and returns
// its character and length, or n = 0 when Telegram would not decode it.
func decodeEntity(s string) (r rune, n int) {
	end := 1
	if strings.HasPrefix(s, "&#") {
		base, digits := 10, "0123456789"
		end = 2
		if strings.HasPrefix(s, "&#x") {
			base, digits, end = 16, "0123456789abcdefABCDEF", 3
		}
		start := end
		for end < len(s) && strings.IndexByte(digits, s[end]) >= 0 {
			end++
		}
		v, err := strconv.ParseUint(s[start:end], base, 32)
		if err != nil || v == 0 || v >= 0x10ffff || (v >= 0xd800 && v <= 0xdfff) || !utf8.ValidRune(rune(v)) {
			return 0, 0
		}
		r = rune(v)
	} else {
		for end < len(s) && (s[end] >= 'a' && s[end] <= 'z' || s[end] >= 'A' && s[end] <= 'Z') {
			end++
		}
		switch s[1:end] {
		case "lt":
			r = '<'
		case "gt":
			r = '>'
		case "amp":
			r = '&'
		case "quot":
			r = '"'
		default:
			return 0, 0
		}
	}
	if end < len(s) && s[end] == ';' {
		end++
	}
	return r, end
}
