package agentproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf8"
)

// MaxLineBytes bounds one stdout line. Lines of 10 MiB and more are normal
// (a tool result holding a big file); past this limit the line is dropped
// and reported as Malformed wrapping ErrMalformedOutput.
const MaxLineBytes = 64 << 20

// malformedSnippet is how much of a bad line a Malformed event keeps.
const malformedSnippet = 256

// wireLine is every stdout line, decoded once. Only the fields agentproc
// uses are declared: encoding/json skips the rest (the multi-KB init lists,
// usage details) without allocating, which keeps the relay path cheap.
// Fields whose JSON type varies between line types are RawMessage.
type wireLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`

	// system/init and every event
	SessionID      string   `json:"session_id"`
	Model          string   `json:"model"`
	Cwd            string   `json:"cwd"`
	PermissionMode string   `json:"permissionMode"`
	Tools          []string `json:"tools"`
	Version        string   `json:"claude_code_version"`

	// system/status, system/compact_boundary, system/api_retry
	Status          json.RawMessage  `json:"status"`
	CompactResult   string           `json:"compact_result"`
	CompactError    string           `json:"compact_error"`
	CompactMetadata *compactMetadata `json:"compact_metadata"`
	Attempt         int              `json:"attempt"`
	MaxRetries      int              `json:"max_retries"`
	RetryDelayMs    int64            `json:"retry_delay_ms"`
	ErrorStatus     int              `json:"error_status"`
	Error           json.RawMessage  `json:"error"`

	// task_started, task_updated, task_notification,
	// background_tasks_changed (background.go); command_lifecycle; the
	// result's origin
	TaskID         string     `json:"task_id"`
	TaskType       string     `json:"task_type"`
	Description    string     `json:"description"`
	IsBackgrounded bool       `json:"is_backgrounded"`
	Summary        string     `json:"summary"`
	OutputFile     string     `json:"output_file"`
	Patch          *wirePatch `json:"patch"`
	Tasks          []wireTask `json:"tasks"`
	CommandUUID    string     `json:"command_uuid"`
	State          string     `json:"state"`
	Origin         *struct {
		Kind string `json:"kind"`
	} `json:"origin"`

	// assistant, user
	Message           *wireMessage `json:"message"`
	IsAPIErrorMessage bool         `json:"is_api_error_message"`

	// result
	IsError           bool                  `json:"is_error"`
	Result            *string               `json:"result"`
	Errors            []string              `json:"errors"`
	TerminalReason    string                `json:"terminal_reason"`
	StopReason        *string               `json:"stop_reason"`
	APIErrorStatus    *int                  `json:"api_error_status"`
	NumTurns          int                   `json:"num_turns"`
	DurationMs        int64                 `json:"duration_ms"`
	TotalCostUSD      float64               `json:"total_cost_usd"`
	Usage             *Usage                `json:"usage"`
	ModelUsage        map[string]ModelUsage `json:"modelUsage"`
	PermissionDenials []struct {
		ToolName string `json:"tool_name"`
	} `json:"permission_denials"`

	// stream_event (--include-partial-messages), tool_progress; the
	// parent is also on assistant and user lines
	Event           *wireStreamEvent `json:"event"`
	APIMessageID    string           `json:"api_message_id"`
	ParentToolUseID *string          `json:"parent_tool_use_id"`
	ToolUseID       string           `json:"tool_use_id"`
	ToolName        string           `json:"tool_name"`
	ElapsedSeconds  float64          `json:"elapsed_time_seconds"`
	Heartbeat       bool             `json:"heartbeat"`

	// rate_limit_event
	RateLimitInfo *wireRateLimit `json:"rate_limit_info"`

	// control_request, control_response, control_cancel_request
	RequestID string           `json:"request_id"`
	Request   *wireCtlRequest  `json:"request"`
	Response  *wireCtlResponse `json:"response"`
}

// wirePatch is what task_updated changed.
type wirePatch struct {
	Status string `json:"status"`
}

type compactMetadata struct {
	Trigger    string `json:"trigger"`
	PreTokens  int64  `json:"pre_tokens"`
	PostTokens int64  `json:"post_tokens"`
}

// wireMessage is an assistant or user message. Content is decoded straight
// into blocks in the line's single pass: assistant content is always an
// array. A user message whose content is a plain string (a replayed prompt)
// fails that field with a type error, which decodeLine tolerates; agentproc
// surfaces nothing from such lines anyway.
type wireMessage struct {
	ID      string      `json:"id"`
	Model   string      `json:"model"`
	Usage   Usage       `json:"usage"`
	Content []wireBlock `json:"content"`
}

// wireBlock is one content block of an assistant or user message.
type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // string or blocks
	IsError   bool            `json:"is_error"`
}

// wireCtlRequest is the inner request of an inbound control_request.
type wireCtlRequest struct {
	Subtype     string            `json:"subtype"`
	ToolName    string            `json:"tool_name"`
	DisplayName string            `json:"display_name"`
	Description string            `json:"description"`
	Input       json.RawMessage   `json:"input"`
	ToolUseID   string            `json:"tool_use_id"`
	BlockedPath string            `json:"blocked_path"`
	Suggestions []json.RawMessage `json:"permission_suggestions"`
	// DecisionReasonType says why the CLI asks: "mode" for an edit that
	// plan mode forbids (docs/claude-code.md §2).
	DecisionReasonType      string `json:"decision_reason_type"`
	RequiresUserInteraction bool   `json:"requires_user_interaction"`
	// mcp_message
	ServerName string          `json:"server_name"`
	Message    json.RawMessage `json:"message"`
}

// wireCtlResponse is the inner response of a control_response.
type wireCtlResponse struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"`
	Error     string          `json:"error"`
}

// controlReply is what the CLI answered to one of our control requests.
type controlReply struct {
	ok       bool
	response json.RawMessage
	err      string
}

// decoded is everything one line yields: events to publish, plus the
// control traffic the Process handles itself.
type decoded struct {
	events []Event
	// reply is set for a control_response, keyed by replyID.
	replyID string
	reply   controlReply
	// unsupported is set for an inbound control_request agentproc does not
	// handle; the Process answers it with an error so the CLI never waits.
	unsupported     string
	unsupportedType string
	// perm is set for can_use_tool, so the Process can remember the input
	// and suggestions for the answer.
	perm *PermissionRequest
	// cancelID is set for control_cancel_request.
	cancelID string
	// mcp is set for an mcp_message request to the host's tools.
	mcp *mcpMessage
}

// decoder turns lines into events. It remembers the last real assistant
// call of the turn, because the result's own usage is summed over the
// turn's calls and overstates the context (PROTOCOL.md §9).
type decoder struct {
	lastUsage Usage
	lastModel string
	sawCall   bool
	// limitReset is the reset of a rejected usage window the CLI reported
	// during the turn, which its 429 result does not repeat.
	limitReset time.Time
	// structured are the tool_use ids of the turn whose results are kept
	// whole (structuredTools).
	structured map[string]bool
}

// errResultDecode marks a result line that did not decode: the turn it ends
// cannot be reported, so Turn fails with ErrMalformedOutput.
var errResultDecode = fmt.Errorf("decoding result: %w", ErrMalformedOutput)

// decodeLine decodes one stdout line. Blank lines yield nothing; a line that
// is not JSON yields a Malformed event. Unknown types and subtypes yield
// nothing.
func (d *decoder) decodeLine(line []byte) decoded {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return decoded{}
	}
	var w wireLine
	if err := json.Unmarshal(line, &w); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return decoded{events: []Event{Malformed{Line: snippet(line), Err: err}}}
		}
		// A field of an unexpected JSON type: encoding/json filled in
		// everything else, which is good enough for every line but a
		// result, whose figures callers act on.
		if w.Type == "result" {
			d.lastUsage, d.lastModel, d.sawCall = Usage{}, "", false // the turn ended all the same
			return decoded{events: []Event{Malformed{Line: snippet(line), Err: fmt.Errorf("%w: %w", errResultDecode, err)}}}
		}
	}
	switch w.Type {
	case "system":
		return decoded{events: d.system(&w)}
	case "assistant":
		return decoded{events: d.assistant(&w)}
	case "user":
		return decoded{events: d.userEvents(&w, line)}
	case "result":
		return decoded{events: []Event{d.result(&w)}}
	case "control_request":
		return controlRequest(&w)
	case "control_response":
		if w.Response == nil {
			return decoded{}
		}
		r := w.Response
		return decoded{replyID: r.RequestID, reply: controlReply{
			ok: r.Subtype == "success", response: r.Response, err: r.Error,
		}}
	case "control_cancel_request":
		return decoded{cancelID: w.RequestID, events: []Event{PermissionCancel{RequestID: w.RequestID}}}
	case "stream_event":
		return decoded{events: streamEvent(&w)}
	case "tool_progress":
		return decoded{events: toolProgress(&w)}
	case "rate_limit_event":
		rl := rateLimitEvent(&w)
		if rl.Rejected() {
			d.limitReset = rl.ResetsAt
		}
		return decoded{events: []Event{rl}}
	case "command_lifecycle":
		return decoded{events: []Event{CommandState{UUID: w.CommandUUID, State: w.State}}}
	}
	return decoded{}
}

func (d *decoder) system(w *wireLine) []Event {
	switch w.Subtype {
	case "init":
		return []Event{Init{
			SessionID:      w.SessionID,
			Model:          w.Model,
			Cwd:            w.Cwd,
			PermissionMode: w.PermissionMode,
			Tools:          w.Tools,
			Version:        w.Version,
		}}
	case "status":
		var status *string
		_ = json.Unmarshal(w.Status, &status) // not a string: not compaction news
		var evs []Event
		switch {
		case status != nil && *status == "compacting":
			evs = append(evs, Compaction{Active: true})
		case w.CompactResult != "":
			evs = append(evs, Compaction{Result: w.CompactResult, Error: w.CompactError})
		}
		if w.PermissionMode != "" {
			evs = append(evs, ModeChange{Mode: w.PermissionMode})
		}
		return evs
	case "compact_boundary":
		var cb CompactBoundary
		if m := w.CompactMetadata; m != nil {
			cb = CompactBoundary{Trigger: m.Trigger, PreTokens: m.PreTokens, PostTokens: m.PostTokens}
		}
		return []Event{cb}
	case "api_retry":
		return []Event{APIRetry{
			Attempt:      w.Attempt,
			MaxRetries:   w.MaxRetries,
			RetryDelayMs: w.RetryDelayMs,
			ErrorStatus:  w.ErrorStatus,
			Error:        rawString(w.Error),
		}}
	}
	return taskEvents(w)
}

func (d *decoder) assistant(w *wireLine) []Event {
	m := w.Message
	if m == nil {
		return nil
	}
	synthetic := m.Model == "<synthetic>" || w.IsAPIErrorMessage
	if !synthetic {
		d.lastUsage, d.lastModel, d.sawCall = m.Usage, m.Model, true
	}
	evs := make([]Event, 0, len(m.Content))
	for i := range m.Content {
		b := &m.Content[i]
		switch b.Type {
		case "text":
			evs = append(evs, AssistantText{
				MessageID: m.ID, Model: m.Model, Text: b.Text, Usage: m.Usage, Synthetic: synthetic,
			})
		case "tool_use":
			parent := ""
			if w.ParentToolUseID != nil {
				parent = *w.ParentToolUseID
			}
			d.noteStructured(b.ID, b.Name)
			evs = append(evs, ToolUse{MessageID: m.ID, ID: b.ID, Name: b.Name, Input: b.Input, Parent: parent})
		}
	}
	return evs
}

func (d *decoder) userEvents(w *wireLine, line []byte) []Event {
	if w.Message == nil {
		return nil
	}
	var evs []Event
	for i := range w.Message.Content {
		if b := &w.Message.Content[i]; b.Type == "tool_result" {
			tr := ToolResult{ToolUseID: b.ToolUseID, Content: contentText(b.Content), IsError: b.IsError}
			if d.structured[b.ToolUseID] {
				delete(d.structured, b.ToolUseID)
				tr.Structured = structuredResult(line)
			}
			evs = append(evs, tr)
		}
	}
	return evs
}

func (d *decoder) result(w *wireLine) *Result {
	r := &Result{
		SessionID:      w.SessionID,
		Subtype:        w.Subtype,
		IsError:        w.IsError,
		Errors:         w.Errors,
		TerminalReason: w.TerminalReason,
		NumTurns:       w.NumTurns,
		DurationMs:     w.DurationMs,
		TotalCostUSD:   w.TotalCostUSD,
		ModelUsage:     w.ModelUsage,
	}
	if w.Result != nil {
		r.Text = *w.Result
	}
	if w.StopReason != nil {
		r.StopReason = *w.StopReason
	}
	if w.Origin != nil {
		r.Origin = w.Origin.Kind
	}
	if w.APIErrorStatus != nil {
		r.APIErrorStatus = *w.APIErrorStatus
	}
	if w.Usage != nil {
		r.Usage = *w.Usage
	}
	for _, pd := range w.PermissionDenials {
		r.PermissionDenials = append(r.PermissionDenials, pd.ToolName)
	}
	if d.sawCall {
		r.ContextTokens = d.lastUsage.ContextTokens()
		r.Model = d.lastModel
	}
	// The next turn starts from scratch: a turn without an API call (an
	// unknown --resume id, an idle interrupt) must not report old figures.
	d.lastUsage, d.lastModel, d.sawCall = Usage{}, "", false
	if r.IsError {
		r.LimitResetsAt = d.limitReset
	}
	d.limitReset = time.Time{}
	clear(d.structured)
	return r
}

func controlRequest(w *wireLine) decoded {
	if w.Request == nil {
		return decoded{unsupported: w.RequestID}
	}
	rq := w.Request
	if rq.Subtype == "mcp_message" {
		m := &mcpMessage{requestID: w.RequestID, server: rq.ServerName}
		if err := json.Unmarshal(rq.Message, &m.msg); err != nil {
			return decoded{unsupported: w.RequestID, unsupportedType: "mcp_message without a JSON-RPC message"}
		}
		return decoded{mcp: m}
	}
	if rq.Subtype != "can_use_tool" {
		return decoded{unsupported: w.RequestID, unsupportedType: rq.Subtype}
	}
	pr := PermissionRequest{
		RequestID:   w.RequestID,
		ToolName:    rq.ToolName,
		DisplayName: rq.DisplayName,
		Description: rq.Description,
		Input:       rq.Input,
		ToolUseID:   rq.ToolUseID,
		BlockedPath: rq.BlockedPath,
		Suggestions: rq.Suggestions,

		DecisionReasonType:      rq.DecisionReasonType,
		RequiresUserInteraction: rq.RequiresUserInteraction,
	}
	return decoded{events: []Event{pr}, perm: &pr}
}

// decodeBlocks reads message content, which is a string (one text block) or
// an array of blocks.
func decodeBlocks(raw json.RawMessage) []wireBlock {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		return []wireBlock{{Type: "text", Text: s}}
	}
	var blocks []wireBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	return blocks
}

// contentText flattens tool_result content (a string or text blocks).
func contentText(raw json.RawMessage) string {
	var sb bytes.Buffer
	for _, b := range decodeBlocks(raw) {
		if b.Type != "text" {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(b.Text)
	}
	return sb.String()
}

func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// snippet keeps the start of a bad line for logs, cut on a rune boundary.
func snippet(line []byte) string {
	if len(line) <= malformedSnippet {
		return string(line)
	}
	cut := malformedSnippet
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return string(line[:cut]) + "…"
}

// lineReader splits stdout into lines of any length up to max, without the
// 64 KiB ceiling of bufio.Scanner's default and without giving up on the
// stream when one line is too long.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return newLineReaderSize(r, max, 64<<10)
}

// newLineReaderSize lets tests use a tiny buffer, so that lines spanning
// many buffer fills are exercised with small inputs.
func newLineReaderSize(r io.Reader, max, size int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, size), max: max}
}

// errLineTooLong reports a line past the limit; the reader has skipped it.
var errLineTooLong = errors.New("stdout line too long")

// next returns the next line without its newline. The slice is valid until
// the following call. At the end of input it returns io.EOF, after the last
// unterminated line if any.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	tooLong := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		n := len(chunk)
		if err == nil {
			n-- // the newline does not count
		}
		if !tooLong {
			if len(lr.buf)+n > lr.max {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else if err == nil && len(lr.buf) == 0 {
				// The common case: the whole line sits in the buffer.
				return chunk[:len(chunk)-1], nil
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, errLineTooLong
			}
			return lr.buf[:len(lr.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case tooLong:
			return nil, errLineTooLong
		case len(lr.buf) > 0:
			return lr.buf, nil
		default:
			return nil, err
		}
	}
}

// afterExitReader reads stdout until EOF, or, once wait set a deadline
// after the exit, until the pipe stays idle for pipeIdleWait. The deadline
// alone would lose lines still in the pipe while a slow consumer holds the
// reader up (backpressure), so on expiry it reads on with short deadlines
// as long as data comes.
type afterExitReader struct{ f *os.File }

func (r *afterExitReader) Read(b []byte) (int, error) {
	n, err := r.f.Read(b)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return n, err
	}
	_ = r.f.SetReadDeadline(time.Now().Add(pipeIdleWait))
	n, err = r.f.Read(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, io.EOF
	}
	return n, err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return string(b)
}
