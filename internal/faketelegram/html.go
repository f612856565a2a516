package faketelegram

import (
	"errors"
	"fmt"
	"html"
	"strings"
)

// htmlTags are the tags Telegram's HTML parse mode supports.
var htmlTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "span": true, "tg-spoiler": true,
	"a": true, "code": true, "pre": true, "blockquote": true, "tg-emoji": true,
}

// parseHTML reads text in Telegram's HTML parse mode and returns the
// visible text, or the error Telegram reports after "can't parse entities:"
// (byte offsets into text, as Telegram gives them; the messages keep
// Telegram's capitals).
func parseHTML(text string) (string, error) {
	var (
		out   strings.Builder
		open  []string
		i     int
		chunk int // start of the text not yet copied
	)
	flush := func(end int) {
		out.WriteString(text[chunk:end])
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
				return "", fmt.Errorf("Unexpected end tag at byte offset %d", start)
			}
			return "", fmt.Errorf("Unsupported start tag \"%s\" at byte offset %d", name, start)
		}
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			return "", fmt.Errorf("Unclosed start tag at byte offset %d", start)
		}
		attrs := strings.TrimSpace(rest[nameEnd:end])
		i += end + 2
		chunk = i
		if closing {
			name = name[1:]
			if len(open) == 0 {
				return "", fmt.Errorf("Unexpected end tag at byte offset %d", start)
			}
			if want := open[len(open)-1]; name != want {
				return "", fmt.Errorf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", start, want, name)
			}
			open = open[:len(open)-1]
			continue
		}
		if err := checkAttrs(name, attrs, start); err != nil {
			return "", err
		}
		open = append(open, name)
	}
	flush(len(text))
	if len(open) > 0 {
		return "", fmt.Errorf("Can't find end tag corresponding to start tag \"%s\"", open[len(open)-1])
	}
	return html.UnescapeString(out.String()), nil
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
