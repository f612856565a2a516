package agentproc

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// ContinuePrompt is the prompt that resumes an interrupted turn: the CLI's
// own recovery sends it, and so does a caller recovering a turn.
const ContinuePrompt = "Continue from where you left off."

// ReplyAfter returns the assistant text the transcript at path holds after
// the user line whose uuid is uuid: the reply to that message (and to
// ContinuePrompt continuations of its turn), up to the next prompt, as far
// as it was written. found is false when
// no such user line is there. After a crash between the end of a turn and
// the posting of its reply, this is the reply that can still be delivered.
//
// The file is read from the end in windows that double until the line is
// inside, so a recent message costs one small read. Sidechain lines and API
// error lines are skipped.
func ReplyAfter(path, uuid string) (text string, found bool, err error) {
	if uuid == "" || strings.ContainsAny(uuid, "\"\\\n") {
		return "", false, fmt.Errorf("reading the reply in %s: invalid uuid %q", path, uuid)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false, fmt.Errorf("reading the reply in %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, fmt.Errorf("reading the reply in %s: %w", path, err)
	}
	pat := []byte(`"uuid":"` + uuid + `"`)
	for window := int64(classifyWindow); ; window *= 2 {
		buf, whole, err := readTailLines(f, fi.Size(), window, nil)
		if err != nil {
			return "", false, fmt.Errorf("reading the reply in %s: %w", path, err)
		}
		if after, ok := afterUserLine(buf, pat, uuid); ok {
			return replyText(after), true, nil
		}
		if whole {
			return "", false, nil
		}
	}
}

// afterUserLine finds the last user line of buf with that uuid and returns
// what follows it.
func afterUserLine(buf, pat []byte, uuid string) ([]byte, bool) {
	for hi := len(buf); ; {
		i := bytes.LastIndex(buf[:hi], pat)
		if i < 0 {
			return nil, false
		}
		start := bytes.LastIndexByte(buf[:i], '\n') + 1
		end := len(buf)
		if j := bytes.IndexByte(buf[i:], '\n'); j >= 0 {
			end = i + j
		}
		if r, ok := decodeTranscriptLine(bytes.TrimRight(buf[start:end], "\r")); ok && r.Type == "user" && r.UUID == uuid {
			return buf[min(end+1, len(buf)):], true
		}
		hi = i
	}
}

// replyText joins the text blocks of the assistant lines in buf, up to the
// next prompt other than ContinuePrompt.
func replyText(buf []byte) string {
	var parts []string
	transcriptLinesForward(buf, func(line []byte) bool {
		isUser := bytes.Contains(line, tkeyTypeUser)
		if !isUser && !bytes.Contains(line, tkeyTypeAssistant) {
			return true
		}
		r, ok := decodeTranscriptLine(line)
		if !ok || r.IsSidechain {
			return true
		}
		if r.Type == "user" {
			kind, text := classifyUser(&r)
			return kind != userPrompt || strings.TrimSpace(text) == ContinuePrompt
		}
		if r.Type != "assistant" || r.IsAPIError {
			return true
		}
		for _, b := range r.Message.blocks() {
			if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
				parts = append(parts, b.Text)
			}
		}
		return true
	})
	return strings.Join(parts, "\n\n")
}
