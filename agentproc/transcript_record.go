package agentproc

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// transcriptLine is the part of one transcript line these helpers look at.
// Lines are decoded tolerantly: unknown fields and types are ignored, and a
// line that does not decode is skipped by the callers.
type transcriptLine struct {
	Type             string             `json:"type"`
	UUID             string             `json:"uuid"`
	IsSidechain      bool               `json:"isSidechain"`
	IsMeta           bool               `json:"isMeta"`
	IsCompactSummary bool               `json:"isCompactSummary"`
	IsAPIError       bool               `json:"isApiErrorMessage"`
	Cwd              string             `json:"cwd"`
	GitBranch        string             `json:"gitBranch"`
	Message          *transcriptMessage `json:"message"`

	// Bookkeeping lines.
	LastPrompt  string `json:"lastPrompt"`  // last-prompt
	CustomTitle string `json:"customTitle"` // custom-title (/rename)
	AITitle     string `json:"aiTitle"`     // ai-title
	Summary     string `json:"summary"`     // summary
}

type transcriptMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	StopReason *string         `json:"stop_reason"`
}

// transcriptBlock is one element of a message's content array.
type transcriptBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func decodeTranscriptLine(line []byte) (transcriptLine, bool) {
	var r transcriptLine
	if len(line) == 0 || line[0] != '{' {
		return r, false
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return r, false
	}
	return r, true
}

// blocks returns the content of a message as blocks; a plain string content
// (how the CLI stores a typed prompt) becomes one text transcriptBlock.
func (m *transcriptMessage) blocks() []transcriptBlock {
	if m == nil || len(m.Content) == 0 {
		return nil
	}
	if m.Content[0] == '"' {
		var s string
		if json.Unmarshal(m.Content, &s) != nil {
			return nil
		}
		return []transcriptBlock{{Type: "text", Text: s}}
	}
	var bs []transcriptBlock
	if json.Unmarshal(m.Content, &bs) != nil {
		return nil
	}
	return bs
}

// userLineKind says what a user line is: only prompts count as something
// the person typed. The CLI also stores tool results, the markers it writes
// when a turn is interrupted, compaction summaries and the output of local
// slash commands as user lines.
type userLineKind int

const (
	userOther      userLineKind = iota // meta, command output, summary, empty
	userPrompt                         // text the person sent
	userToolResult                     // result of a tool call, mid-turn
	userInterrupt                      // "[Request interrupted by user…]": the turn was stopped on purpose
)

// interruptMarker starts the user line the CLI writes when a turn is
// interrupted (by the control interrupt, SIGINT or a deny with interrupt).
const interruptMarker = "[Request interrupted by user"

// nonPromptPrefixes start user text that the CLI generated rather than the
// person: slash command echoes and their output.
var nonPromptPrefixes = []string{
	"<command-name>", "<command-message>", "<command-args>",
	"<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>",
}

func classifyUser(r *transcriptLine) (userLineKind, string) {
	if r.IsMeta || r.IsCompactSummary {
		return userOther, ""
	}
	var text strings.Builder
	for _, b := range r.Message.blocks() {
		switch b.Type {
		case "tool_result":
			return userToolResult, ""
		case "text":
			if text.Len() > 0 && b.Text != "" {
				text.WriteByte('\n')
			}
			text.WriteString(b.Text)
		}
	}
	return classifyUserText(text.String())
}

func classifyUserText(s string) (userLineKind, string) {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return userOther, ""
	case strings.HasPrefix(t, interruptMarker):
		return userInterrupt, ""
	}
	for _, p := range nonPromptPrefixes {
		if strings.HasPrefix(t, p) {
			return userOther, ""
		}
	}
	return userPrompt, t
}

// transcriptLinesBackward calls fn for each line of buf from the last to the
// first, until fn returns false. Empty lines are skipped; a trailing '\r'
// is dropped.
func transcriptLinesBackward(buf []byte, fn func(line []byte) bool) {
	for end := len(buf); end > 0; {
		start := bytes.LastIndexByte(buf[:end], '\n') + 1
		line := bytes.TrimRight(buf[start:end], "\r")
		if len(line) > 0 && !fn(line) {
			return
		}
		end = start - 1
	}
}

// transcriptLinesForward calls fn for each non-empty line of buf in order,
// until fn returns false.
func transcriptLinesForward(buf []byte, fn func(line []byte) bool) {
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		var line []byte
		if i < 0 {
			line, buf = buf, nil
		} else {
			line, buf = buf[:i], buf[i+1:]
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) > 0 && !fn(line) {
			return
		}
	}
}

// Keys the CLI writes without spaces (JSON.stringify). They let a reader
// skip most lines without decoding them; a line is still decoded before
// anything is taken from it.
var (
	tkeyTypeUser      = []byte(`"type":"user"`)
	tkeyTypeAssistant = []byte(`"type":"assistant"`)
	tkeyLastPrompt    = []byte(`"type":"last-prompt"`)
	tkeyCustomTitle   = []byte(`"type":"custom-title"`)
	tkeyAITitle       = []byte(`"type":"ai-title"`)
	tkeySummary       = []byte(`"type":"summary"`)
	tkeyCwd           = []byte(`"cwd":"`)
)

// partialUserText digs the beginning of a prompt out of a user line that was
// cut by a read window (a long first prompt does not fit the 4 KB head). It
// returns "" unless the line plainly is a user prompt line.
func partialUserText(line []byte) string {
	ti := bytes.Index(line, tkeyTypeUser)
	if ti < 0 || bytes.Contains(line, []byte(`"isMeta":true`)) || bytes.Contains(line, []byte(`"isCompactSummary":true`)) {
		return ""
	}
	rest := line[ti:]
	mi := bytes.Index(rest, []byte(`"message":{`))
	if mi < 0 {
		return ""
	}
	rest = rest[mi:]
	ci := bytes.Index(rest, []byte(`"content":`))
	if ci < 0 {
		return ""
	}
	rest = rest[ci+len(`"content":`):]
	switch {
	case bytes.HasPrefix(rest, []byte(`"`)):
		rest = rest[1:]
	case bytes.HasPrefix(rest, []byte(`[`)):
		if bytes.Contains(rest, []byte(`"type":"tool_result"`)) {
			return ""
		}
		k := []byte(`"text":"`)
		i := bytes.Index(rest, k)
		if i < 0 {
			return ""
		}
		rest = rest[i+len(k):]
	default:
		return ""
	}
	kind, text := classifyUserText(jsonStringPrefix(rest))
	if kind != userPrompt {
		return ""
	}
	return text
}

// jsonStringPrefix decodes the body of a JSON string (after its opening
// quote) up to its closing quote or, when the data was cut, as far as it
// goes. An incomplete escape or UTF-8 sequence at the cut is dropped.
func jsonStringPrefix(b []byte) string {
	var out []byte
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			return string(out)
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(b) {
			return trimCutRune(out)
		}
		switch e := b[i+1]; e {
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			r, n := decodeUnicodeEscape(b[i:])
			if n == 0 {
				return trimCutRune(out)
			}
			out = utf8.AppendRune(out, r)
			i += n
			continue
		default: // '"', '\\', '/'
			out = append(out, e)
		}
		i += 2
	}
	return trimCutRune(out)
}

// decodeUnicodeEscape decodes \uXXXX (or a \uXXXX\uXXXX surrogate pair) at
// the start of b; n is 0 when b is too short to hold it.
func decodeUnicodeEscape(b []byte) (rune, int) {
	hex := func(p []byte) (rune, bool) {
		if len(p) < 6 || p[0] != '\\' || p[1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range p[2:6] {
			r <<= 4
			switch {
			case c >= '0' && c <= '9':
				r |= rune(c - '0')
			case c >= 'a' && c <= 'f':
				r |= rune(c-'a') + 10
			case c >= 'A' && c <= 'F':
				r |= rune(c-'A') + 10
			default:
				return utf8.RuneError, true
			}
		}
		return r, true
	}
	r1, ok := hex(b)
	if !ok {
		return 0, 0
	}
	if r1 < 0xD800 || r1 > 0xDBFF {
		return r1, 6
	}
	r2, ok := hex(b[6:])
	if !ok {
		if len(b) < 12 && (len(b) == 6 || b[6] == '\\') {
			return 0, 0 // the low half was cut off
		}
		return utf8.RuneError, 6
	}
	if r2 < 0xDC00 || r2 > 0xDFFF {
		return utf8.RuneError, 6
	}
	return (r1-0xD800)<<10 + (r2 - 0xDC00) + 0x10000, 12
}

// trimCutRune drops an incomplete UTF-8 sequence left at the end by a cut.
func trimCutRune(b []byte) string {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				b = b[:i]
			}
			break
		}
	}
	return string(b)
}
