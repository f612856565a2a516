package agentproc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Interruption says how a session's last turn ended, as read from its
// transcript. The values are the CLI's own names for its recovery classes.
type Interruption string

const (
	// InterruptionNone: the last turn finished (or was stopped on purpose,
	// or failed with an API error the person was shown); nothing to resume.
	InterruptionNone Interruption = "none"
	// InterruptionPrompt: the person's prompt is the last message and no
	// reply was written after it. The prompt reached the CLI (it is in the
	// history the CLI will send on resume) but was never answered.
	InterruptionPrompt Interruption = "interrupted_prompt"
	// InterruptionTurn: the turn stopped mid-way (a tool call without its
	// result, a tool result without the reply that follows, or a reply
	// without a final stop). The CLI's own recovery sends "Continue from
	// where you left off."
	InterruptionTurn Interruption = "interrupted_turn"
)

// classifyWindow is the first tail read of ClassifyEnd. It doubles until a
// conversation line is inside, so a huge last line is still found whole.
const classifyWindow = 64 << 10

// ClassifyEnd reads the end of the transcript at path and says whether its
// last turn was interrupted. Only conversation lines count (user and
// assistant, not sidechains); bookkeeping (queue-operation, last-prompt,
// cost-state, api-request*, mode), attachments and system lines are
// skipped. A transcript with no conversation line is InterruptionNone.
//
// The decision on the last conversation line:
//   - user prompt: InterruptionPrompt;
//   - user tool result: InterruptionTurn;
//   - user "[Request interrupted by user…]" marker, meta line, compaction
//     summary or slash command output: InterruptionNone;
//   - assistant with a tool_use block (its result was never written), or
//     whose stop_reason is missing or not final: InterruptionTurn;
//   - assistant with a final stop_reason (end_turn, stop_sequence,
//     max_tokens, refusal…) or an API error line: InterruptionNone. An API
//     error ended the turn (the CLI reported it as the turn's result), and
//     the same prompt would likely fail again (prompt too long), so
//     retrying is the caller's decision, not a recovery.
func ClassifyEnd(path string) (Interruption, error) {
	f, err := os.Open(path)
	if err != nil {
		return InterruptionNone, fmt.Errorf("classifying transcript %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return InterruptionNone, fmt.Errorf("classifying transcript %s: %w", path, err)
	}
	size := fi.Size()

	// The first window fits the lite read buffers; only a grown one is
	// allocated.
	bp := liteBufs.Get().(*[]byte)
	defer liteBufs.Put(bp)
	for window := int64(classifyWindow); ; window *= 2 {
		buf, whole, err := readTailLines(f, size, window, *bp)
		if err != nil {
			return InterruptionNone, fmt.Errorf("classifying transcript %s: %w", path, err)
		}
		result, found := classifyLast(buf)
		if found || whole {
			return result, nil
		}
	}
}

// readTailLines reads the last window bytes of a file of the given size and
// drops the first line when the window cut it. whole reports that the
// window reached the start of the file. scratch is used when it is large
// enough.
func readTailLines(r io.ReaderAt, size, window int64, scratch []byte) (buf []byte, whole bool, err error) {
	start := max(0, size-window)
	from := max(0, start-1) // one byte early, to see if the first line is whole
	if int64(len(scratch)) >= size-from {
		buf = scratch[:size-from]
	} else {
		buf = make([]byte, size-from)
	}
	n, err := r.ReadAt(buf, from)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	buf = buf[:n]
	if from == 0 {
		return buf, true, nil
	}
	if len(buf) > 0 && buf[0] == '\n' {
		return buf[1:], false, nil
	}
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		return buf[i+1:], false, nil
	}
	return nil, false, nil
}

// classifyLast finds the last conversation line in buf and classifies it.
func classifyLast(buf []byte) (result Interruption, found bool) {
	result = InterruptionNone
	transcriptLinesBackward(buf, func(line []byte) bool {
		if !bytes.Contains(line, tkeyTypeUser) && !bytes.Contains(line, tkeyTypeAssistant) {
			return true
		}
		r, ok := decodeTranscriptLine(line)
		if !ok || r.IsSidechain || (r.Type != "user" && r.Type != "assistant") {
			return true
		}
		found = true
		if r.Type == "user" {
			result = classifyUserEnd(&r)
		} else {
			result = classifyAssistantEnd(&r)
		}
		return false
	})
	return result, found
}

func classifyUserEnd(r *transcriptLine) Interruption {
	switch kind, _ := classifyUser(r); kind {
	case userPrompt:
		return InterruptionPrompt
	case userToolResult:
		return InterruptionTurn
	default:
		return InterruptionNone
	}
}

// finalStops are the stop reasons after which the model hands the turn
// back. tool_use and pause_turn mean the turn goes on.
var finalStops = map[string]bool{
	"end_turn":                      true,
	"stop_sequence":                 true,
	"max_tokens":                    true,
	"refusal":                       true,
	"model_context_window_exceeded": true,
}

func classifyAssistantEnd(r *transcriptLine) Interruption {
	if r.IsAPIError {
		return InterruptionNone
	}
	for _, b := range r.Message.blocks() {
		if b.Type == "tool_use" {
			return InterruptionTurn
		}
	}
	if r.Message != nil && r.Message.StopReason != nil && finalStops[*r.Message.StopReason] {
		return InterruptionNone
	}
	return InterruptionTurn
}

// ContainsUUID's backward search reads 64 KB first (a message sent just
// before a crash is near the end), then doubles its step up to 1 MB.
const (
	containsFirstStep = 64 << 10
	containsMaxStep   = 1 << 20
)

// maxVerifiedLine bounds the line ContainsUUID decodes to confirm a match.
const maxVerifiedLine = 64 << 20

// ContainsUUID reports whether the transcript at path holds a user line
// whose uuid is uuid. The CLI stores a stream-json user message under the
// uuid it was sent with, so after a crash this tells whether the CLI had
// received a message (resume the turn) or not (send it again).
//
// The file is searched from the end backwards, in steps growing from 64 KB
// to 1 MB, with a byte search, and only lines holding `"uuid":"<uuid>"` are decoded, so a
// message sent recently is found after reading little. A uuid that is not
// there costs one pass over the whole file.
func ContainsUUID(path, uuid string) (bool, error) {
	return searchLines(path, uuid, `"uuid":"`, userLineHasUUID)
}

// ContainsAbsorbed reports whether the transcript at path shows the user
// message sent with uuid taken into a running turn. The CLI (2.1.332)
// stores such a message not as a user line of its own but as an
// attachment of type queued_command whose source_uuid is the uuid it was
// sent with, right after the tool result whose follow-up request carries
// it (captures/steer_transcript): a turn the transcript shows it in
// answers it, or, cut off, is resumed with it in its history. It is
// searched for as ContainsUUID searches.
func ContainsAbsorbed(path, uuid string) (bool, error) {
	return searchLines(path, uuid, `"source_uuid":"`, absorbedLineHasUUID)
}

// searchLines searches the transcript at path backwards for a line holding
// key followed by uuid and a quote, and reports whether one such line
// passes verify (the pattern could be quoted inside another line).
func searchLines(path, uuid, key string, verify func(r io.ReaderAt, size, off int64, uuid string) (bool, error)) (bool, error) {
	if uuid == "" || strings.ContainsAny(uuid, "\"\\\n") {
		return false, fmt.Errorf("searching transcript %s: invalid uuid %q", path, uuid)
	}
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("searching transcript %s for %s: %w", path, uuid, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("searching transcript %s for %s: %w", path, uuid, err)
	}
	size := fi.Size()
	pat := []byte(key + uuid + `"`)

	step := int64(containsFirstStep)
	buf := make([]byte, step+int64(len(pat)))
	for end := size; end > 0; {
		start := max(0, end-step)
		// Read a little past end so a match that straddles two chunks is
		// seen; a match starting at or after end was seen in the last round.
		n, err := f.ReadAt(buf[:min(size, end+int64(len(pat))-1)-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return false, fmt.Errorf("searching transcript %s for %s: %w", path, uuid, err)
		}
		chunk := buf[:n]
		for hi := min(len(chunk), int(end-start)+len(pat)-1); ; {
			i := bytes.LastIndex(chunk[:hi], pat)
			if i < 0 {
				break
			}
			ok, err := verify(f, size, start+int64(i), uuid)
			if err != nil {
				return false, fmt.Errorf("searching transcript %s for %s: %w", path, uuid, err)
			}
			if ok {
				return true, nil
			}
			hi = i + len(pat) - 1
		}
		end = start
		if step < containsMaxStep {
			step *= 2
			buf = make([]byte, step+int64(len(pat)))
		}
	}
	return false, nil
}

// userLineHasUUID decodes the line holding offset off and reports whether
// it is a user line with that uuid (rather than, say, a line quoting it).
func userLineHasUUID(r io.ReaderAt, size, off int64, uuid string) (bool, error) {
	line, err := lineAround(r, size, off)
	if err != nil || line == nil {
		return false, err
	}
	t, ok := decodeTranscriptLine(line)
	return ok && t.Type == "user" && t.UUID == uuid, nil
}

// absorbedLineHasUUID decodes the line holding offset off and reports
// whether it is a queued_command attachment whose source_uuid is uuid.
func absorbedLineHasUUID(r io.ReaderAt, size, off int64, uuid string) (bool, error) {
	line, err := lineAround(r, size, off)
	if err != nil || line == nil {
		return false, err
	}
	var a struct {
		Type        string `json:"type"`
		IsSidechain bool   `json:"isSidechain"`
		Attachment  struct {
			Type       string `json:"type"`
			SourceUUID string `json:"source_uuid"`
		} `json:"attachment"`
	}
	if json.Unmarshal(line, &a) != nil {
		return false, nil
	}
	return a.Type == "attachment" && !a.IsSidechain && a.Attachment.Type == "queued_command" && a.Attachment.SourceUUID == uuid, nil
}

// lineAround reads the whole line holding offset off, or nil when it is
// longer than maxVerifiedLine.
func lineAround(r io.ReaderAt, size, off int64) ([]byte, error) {
	const step = 64 << 10
	buf := make([]byte, step)
	start := int64(0)
	for pos := off; pos > 0; {
		from := max(0, pos-step)
		n, err := r.ReadAt(buf[:pos-from], from)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			start = from + int64(i) + 1
			break
		}
		if off-from > maxVerifiedLine {
			return nil, nil
		}
		pos = from
	}
	stop := size
	for pos := off; pos < size; {
		n, err := r.ReadAt(buf[:min(step, size-pos)], pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if n == 0 {
			break
		}
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			stop = pos + int64(i)
			break
		}
		pos += int64(n)
		if pos-start > maxVerifiedLine {
			return nil, nil
		}
	}
	if stop-start > maxVerifiedLine {
		return nil, nil
	}
	line := make([]byte, stop-start)
	n, err := r.ReadAt(line, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return bytes.TrimRight(line[:n], "\r"), nil
}
