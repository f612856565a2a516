package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// maxBody bounds a request body; the CLI's requests are about 50 KB, a
// long history a few MB.
const maxBody = 64 << 20

// Request is one recorded request, as the fake understood it.
type Request struct {
	Seq    int // 1-based, per list (Requests or OtherRequests)
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte

	Model    string
	Stream   bool
	System   []string // the text of each system block
	Messages []Message
	// LastUserText is all the text of the last role "user" message without
	// the CLI's <system-reminder> sections: where markers are looked for.
	// The CLI merges consecutive user inputs into one message, so a failed
	// prompt's marker is seen again on the next turn, as with the real API.
	LastUserText string
	// Prompt is the last text block of that message (reminders dropped):
	// what was typed last, and what the default reply echoes.
	Prompt string
	// ToolResults are the tool_result blocks of the last user message.
	ToolResults []ToolResult
	// FollowUp is true when that message ends with a tool_result (mid-turn
	// notes aside): the request that carries a tool's output back, not a
	// new prompt.
	FollowUp bool
	// TaskNote is the summary of a <task-notification> in the last user
	// message: the CLI's own request after a background task ended.
	TaskNote string
	// TurnPrompt is the prompt that started the current turn: Prompt, or
	// on a follow-up the last prompt before the turn's tool calls. Its
	// markers drive the whole turn.
	TurnPrompt string
	// TurnToolUses are the tool_use blocks the model sent since
	// TurnPrompt, in order.
	TurnToolUses []ToolUse
	// Tools are the names in the request's tools list. A tool the CLI
	// defers (MCP tools, ExitPlanMode, TodoWrite) is missing until the
	// model fetched it with ToolSearch; from then on it is listed (with
	// defer_loading, resolved by the tool_reference ToolSearch returned).
	Tools []string
	// Cwd is the CLI's working directory, read from its environment
	// message ("Primary working directory: …"); "" when absent.
	Cwd string
	// PlanFile is the plan file the CLI named in plan mode ("create your
	// plan at …", "A plan file already exists at …"); "" outside plan
	// mode.
	PlanFile string
	// MidTurnNotes are the messages the CLI folded into a running turn
	// (sent while a tool ran), each the whole note as the model reads it.
	// Claude Code 2.1.328 sends a note as a role "system" message after
	// the tool_result's message; 2.1.332 as a text block after the
	// tool_result, in the same user message.
	MidTurnNotes []string

	// Outcome is what the fake answered (one of the Outcome constants).
	Outcome string
	// Usage is the usage the fake reported (zero for error answers).
	Usage Usage
}

// Message is one entry of the request's messages. Role may be "system": the
// CLI sends those inside messages.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// ToolResult is a tool_result content block.
type ToolResult struct {
	ToolUseID string
	Content   string // its text blocks, joined
	IsError   bool
	// Types are the types of its content blocks ("text", "image",
	// "tool_reference"); a plain string content counts as "text".
	Types []string
}

// ToolUse is a tool_use block of an assistant message.
type ToolUse struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// Contains reports whether any message or system block holds s: the way to
// assert that a history reached the API.
func (r Request) Contains(s string) bool {
	for _, m := range r.Messages {
		if strings.Contains(m.Text(), s) {
			return true
		}
		for _, tr := range m.ToolResults() {
			if strings.Contains(tr.Content, s) {
				return true
			}
		}
	}
	for _, sys := range r.System {
		if strings.Contains(sys, s) {
			return true
		}
	}
	return false
}

// Text joins the message's text blocks (or returns its string content).
func (m Message) Text() string {
	var parts []string
	for _, b := range m.blocks() {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolResults returns the message's tool_result blocks.
func (m Message) ToolResults() []ToolResult {
	var out []ToolResult
	for _, b := range m.blocks() {
		if b.Type == "tool_result" {
			out = append(out, b.toolResult())
		}
	}
	return out
}

// ToolUses returns the message's tool_use blocks.
func (m Message) ToolUses() []ToolUse {
	var out []ToolUse
	for _, b := range m.blocks() {
		if b.Type == "tool_use" {
			out = append(out, ToolUse{ID: b.ID, Name: b.Name, Input: b.Input})
		}
	}
	return out
}

// BlockTypes returns the type of each content block ("text", "image",
// "tool_result", …), in order: the way to assert that an image reached the
// API.
func (m Message) BlockTypes() []string {
	var out []string
	for _, b := range m.blocks() {
		out = append(out, b.Type)
	}
	return out
}

// Images returns the message's image blocks, including those inside its
// tool_results (what the Read tool sends for a picture).
func (m Message) Images() []Image {
	var out []Image
	for _, b := range m.blocks() {
		switch b.Type {
		case "image":
			out = append(out, b.image())
		case "tool_result":
			for _, ib := range decodeBlocks(b.Content) {
				if ib.Type == "image" {
					out = append(out, ib.image())
				}
			}
		}
	}
	return out
}

// Image is an image content block as the API received it.
type Image struct {
	SourceType string // "base64" or "url"
	MediaType  string // e.g. "image/png"
	Data       string // the base64 text
}

// block is the subset of a content block the fake reads.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

func (b block) toolResult() ToolResult {
	tr := ToolResult{ToolUseID: b.ToolUseID, Content: blockText(b.Content), IsError: b.IsError}
	for _, c := range decodeBlocks(b.Content) {
		tr.Types = append(tr.Types, c.Type)
	}
	return tr
}

func (b block) image() Image {
	if b.Source == nil {
		return Image{}
	}
	return Image{SourceType: b.Source.Type, MediaType: b.Source.MediaType, Data: b.Source.Data}
}

// blocks decodes content that is either a string or a list of blocks.
func (m Message) blocks() []block {
	return decodeBlocks(m.Content)
}

func decodeBlocks(raw json.RawMessage) []block {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	if json.Unmarshal(raw, &bs) == nil {
		return bs
	}
	return nil
}

// blockText flattens a tool_result's content (a string or text blocks).
func blockText(raw json.RawMessage) string {
	var parts []string
	for _, b := range decodeBlocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// apiRequest is the subset of a Messages API request body the fake reads.
type apiRequest struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Messages []Message       `json:"messages"`
	Tools    []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return body, fmt.Errorf("reading body: %w", err)
	}
	if len(body) > maxBody {
		return body[:maxBody], fmt.Errorf("body over %d bytes", maxBody)
	}
	return body, nil
}

func newRequest(r *http.Request, body []byte) Request {
	return Request{
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.RawQuery,
		Header: r.Header.Clone(),
		Body:   body,
	}
}

// fill copies the decoded body into the record.
func (r *Request) fill(in apiRequest) {
	r.Model = in.Model
	r.Stream = in.Stream
	r.Messages = in.Messages
	for _, b := range decodeBlocks(in.System) {
		if b.Type == "text" {
			r.System = append(r.System, b.Text)
		}
	}
	for _, t := range in.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	for _, m := range in.Messages {
		for _, b := range m.blocks() {
			if b.Type == "text" && strings.HasPrefix(b.Text, midTurnPrefix) {
				r.MidTurnNotes = append(r.MidTurnNotes, b.Text)
			}
		}
	}
	for i := len(in.Messages) - 1; i >= 0; i-- {
		if in.Messages[i].Role == "user" {
			r.fillLastUser(in.Messages[i])
			break
		}
	}
	r.fillTurn()
	r.Cwd = findCwd(in.Messages)
	r.PlanFile = findPlanFile(in.Messages)
}

// planFileRE finds the plan file path in the CLI's plan mode reminder.
var planFileRE = regexp.MustCompile(`(?:create your plan at|A plan file already exists at) (\S+)`)

func findPlanFile(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := planFileRE.FindStringSubmatch(msgs[i].Text()); m != nil {
			return strings.TrimSuffix(m[1], ".")
		}
	}
	return ""
}

// fillTurn finds the prompt that started the current turn and the tool
// calls made since: the last user message whose last typed block is text
// (not a tool_result) starts the turn.
func (r *Request) fillTurn() {
	var uses [][]ToolUse
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		switch m.Role {
		case "assistant":
			uses = append(uses, m.ToolUses())
		case "user":
			var lr Request
			lr.fillLastUser(m)
			if lr.FollowUp || lr.Prompt == "" {
				continue
			}
			r.TurnPrompt = lr.Prompt
			for j := len(uses) - 1; j >= 0; j-- {
				r.TurnToolUses = append(r.TurnToolUses, uses[j]...)
			}
			return
		}
	}
}

// findCwd reads the working directory from the CLI's environment message.
func findCwd(msgs []Message) string {
	const key = "Primary working directory: "
	for i := len(msgs) - 1; i >= 0; i-- {
		t := msgs[i].Text()
		if j := strings.LastIndex(t, key); j >= 0 {
			line, _, _ := strings.Cut(t[j+len(key):], "\n")
			// "…/other (was …/first)" after a resume from another cwd.
			line, _, _ = strings.Cut(line, " (was ")
			return strings.TrimSpace(line)
		}
	}
	return ""
}

func (r *Request) fillLastUser(m Message) {
	var texts []string
	for _, b := range m.blocks() {
		switch b.Type {
		case "text":
			if n := taskNoteRE.FindStringSubmatch(b.Text); n != nil {
				r.TaskNote = strings.TrimSpace(n[1])
			}
			t := stripReminders(b.Text)
			if t == "" || cliNote.MatchString(t) || strings.HasPrefix(t, midTurnPrefix) {
				// Reminders only, a note the CLI adds itself, or a
				// mid-turn note: not a new prompt the user sent.
				continue
			}
			texts = append(texts, t)
			r.Prompt = t
			r.FollowUp = false
		case "tool_result":
			r.ToolResults = append(r.ToolResults, b.toolResult())
			r.FollowUp = true
		}
	}
	r.LastUserText = strings.Join(texts, "\n")
}

// cliNote matches the text blocks the CLI adds to a user message itself:
// "Tool loaded." after a ToolSearch result (the CLI's own pattern), and
// "[Image: source: …, original WxH, displayed at …]" after an image.
var cliNote = regexp.MustCompile(`^(?:Tool loaded\.(?:\n\[id:[^\]\n]+\])*\n?|\[Image: (?:source: |original \d+x\d+)[^\n]*\])$`)

// taskNoteRE finds the summary of the task-notification the CLI sends the
// model by itself when a background task ended.
var taskNoteRE = regexp.MustCompile(`(?s)<task-notification>.*?<summary>(.*?)</summary>`)

// noteMessage is the user's message inside a mid-turn note: what follows
// the prefix, up to the paragraph the CLI adds after it.
func noteMessage(note string) string {
	msg := strings.TrimPrefix(note, midTurnPrefix)
	msg, _, _ = strings.Cut(msg, "\n\nThis is how Claude Code surfaces")
	return strings.TrimSpace(msg)
}

// midTurnPrefix opens the note by which the CLI hands the model a message
// the user sent while a tool ran (PROTOCOL.md §3).
const midTurnPrefix = "The user sent a new message while you were working:"

// stripReminders drops the <system-reminder> sections the CLI puts in front
// of the user's text, so that echoes and markers see only what was typed.
func stripReminders(text string) string {
	const open, closing = "<system-reminder>", "</system-reminder>"
	for {
		i := strings.Index(text, open)
		if i < 0 {
			break
		}
		j := strings.Index(text[i:], closing)
		if j < 0 {
			text = text[:i]
			break
		}
		text = text[:i] + text[i+j+len(closing):]
	}
	return strings.TrimSpace(text)
}
