package agentproc

import (
	"bytes"
	"encoding/json"
)

// What a turn shows while it runs, beyond its whole messages: the text as
// the model writes it (--include-partial-messages, StartOptions.
// PartialMessages), heartbeats of a running tool, the permission mode
// changing, and the structured results of the task tools. See
// docs/claude-code.md §3 and §6 for the lines these come from.

// CallStart is the start of one API call (stream_event message_start):
// the text deltas that follow belong to a new assistant message.
// Only with PartialMessages.
type CallStart struct {
	MessageID string
	// Parent is the tool_use id of the subagent this call belongs to; ""
	// for the main conversation.
	Parent string
}

// TextDelta is a piece of answer text as the model writes it
// (content_block_delta text_delta). Only text blocks yield it: thinking
// arrives as ThinkingDelta and never here. The CLI sends the whole block
// again afterwards as AssistantText, so a consumer that shows deltas must
// not show that text a second time. Only with PartialMessages.
type TextDelta struct {
	MessageID string
	Index     int // the content block the text belongs to
	Text      string
	Parent    string // as CallStart.Parent
}

// ThinkingDelta says the model is thinking (content_block_delta
// thinking_delta). Its text is deliberately not carried: thinking is never
// shown as if it were the answer. Only with PartialMessages.
type ThinkingDelta struct {
	MessageID string
	Parent    string
}

// ToolProgress is a tool_progress line: a heartbeat the CLI sends every 30
// seconds while a tool runs (Bash, an MCP call). ToolUseID is the running
// call's id (the line's parent_tool_use_id; its own tool_use_id is the
// heartbeat's).
type ToolProgress struct {
	ToolUseID string
	ToolName  string
	Elapsed   float64 // seconds since the tool started
	Heartbeat bool
}

// ModeChange is the permission mode the CLI reports it is in now
// (system/status with permissionMode), e.g. after a plan is approved.
type ModeChange struct {
	Mode string
}

func (CallStart) isEvent()     {}
func (TextDelta) isEvent()     {}
func (ThinkingDelta) isEvent() {}
func (ToolProgress) isEvent()  {}
func (ModeChange) isEvent()    {}

// wireStreamEvent is the API's SSE event inside a stream_event line. Only
// what agentproc surfaces is declared.
type wireStreamEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		ID string `json:"id"`
	} `json:"message"`
	Delta *struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"delta"`
}

// streamEvent decodes a stream_event line.
func streamEvent(w *wireLine) []Event {
	ev := w.Event
	if ev == nil {
		return nil
	}
	parent := ""
	if w.ParentToolUseID != nil {
		parent = *w.ParentToolUseID
	}
	switch ev.Type {
	case "message_start":
		id := w.APIMessageID
		if ev.Message != nil && ev.Message.ID != "" {
			id = ev.Message.ID
		}
		return []Event{CallStart{MessageID: id, Parent: parent}}
	case "content_block_delta":
		if ev.Delta == nil {
			return nil
		}
		switch ev.Delta.Type {
		case "text_delta":
			if ev.Delta.Text == "" {
				return nil
			}
			return []Event{TextDelta{MessageID: w.APIMessageID, Index: ev.Index, Text: ev.Delta.Text, Parent: parent}}
		case "thinking_delta":
			return []Event{ThinkingDelta{MessageID: w.APIMessageID, Parent: parent}}
		}
	}
	return nil
}

// toolProgress decodes a tool_progress line.
func toolProgress(w *wireLine) []Event {
	id := w.ToolUseID
	if w.ParentToolUseID != nil && *w.ParentToolUseID != "" {
		id = *w.ParentToolUseID
	}
	return []Event{ToolProgress{ToolUseID: id, ToolName: w.ToolName, Elapsed: w.ElapsedSeconds, Heartbeat: w.Heartbeat}}
}

// structuredTools are the tools whose results a consumer reads as data
// (ToolResult.Structured): the task tools, whose results carry the ids a
// checklist is built from, and the file tools, whose results carry the
// patch they applied (FilePatchOf, a turn's diff). Other results are not
// copied: a Read's can be megabytes.
var structuredTools = map[string]bool{
	"TaskCreate": true, "TaskUpdate": true, "TaskList": true, "TaskGet": true,
	"Write": true, "Edit": true, "MultiEdit": true,
}

// noteStructured remembers a tool_use whose result is to be kept whole.
func (d *decoder) noteStructured(id, name string) {
	if !structuredTools[name] || id == "" {
		return
	}
	if d.structured == nil {
		d.structured = map[string]bool{}
	}
	d.structured[id] = true
}

// structuredResult reads the tool_use_result of a user line, for the
// results noteStructured asked for: a second, narrow decode of the line,
// paid only by those.
func structuredResult(line []byte) json.RawMessage {
	var v struct {
		ToolUseResult json.RawMessage `json:"tool_use_result"`
	}
	if json.Unmarshal(line, &v) != nil || len(bytes.TrimSpace(v.ToolUseResult)) == 0 {
		return nil
	}
	return v.ToolUseResult
}
