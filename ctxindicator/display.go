package ctxindicator

import (
	"strconv"
	"strings"
)

// Format renders a percentage as the indicator users see: "[ctx: 62%]".
// Values outside 0..100 are clamped.
func Format(pct int) string {
	return "[ctx: " + strconv.Itoa(min(max(pct, 0), 100)) + "%]"
}

// Append puts the indicator on its own line at the end of reply. When ok is
// false (no token data yet) the reply is returned unchanged, so a turn
// without usage never shows a made-up 0%. An empty reply becomes the
// indicator alone. Trailing whitespace is tidied, but never inside code.
func Append(reply string, pct int, ok bool) string {
	if !ok {
		return reply
	}
	body := trimRightOutside(reply, codeSpans(reply))
	if strings.TrimSpace(body) == "" {
		return Format(pct)
	}
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return body + Format(pct)
}
