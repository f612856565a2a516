package agentproc

import (
	"encoding/json"
	"time"
)

// Event is one typed event read from the agent's stdout. Concrete types
// below; unknown stream-json types and subtypes are never surfaced.
type Event interface{ isEvent() }

// Usage is the token usage of one API call (from an assistant event) or the
// sum over a turn (from a result).
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// ContextTokens is what this call put into the model's context window.
func (u Usage) ContextTokens() int64 {
	return u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
}

// ModelUsage is one entry of a result's modelUsage map (cumulative for the
// session, restored across --resume).
type ModelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int64   `json:"contextWindow"`
	MaxOutputTokens          int64   `json:"maxOutputTokens"`
}

// Init is system/init, emitted at the start of every turn.
type Init struct {
	SessionID      string
	Model          string
	Cwd            string
	PermissionMode string
	Tools          []string
	Version        string
}

// AssistantText is one text block of an assistant message. Streamed
// assistant events carry one block each; several may share MessageID.
type AssistantText struct {
	MessageID string
	Model     string
	Text      string
	Usage     Usage
	// Synthetic is true for the CLI's own error messages (model
	// "<synthetic>", is_api_error_message), e.g. "Prompt is too long".
	Synthetic bool
}

// ToolUse is a tool_use block of an assistant message.
type ToolUse struct {
	MessageID string
	ID        string
	Name      string
	Input     json.RawMessage
	// Parent is the tool_use id of the subagent that made the call; ""
	// for the main conversation.
	Parent string
}

// ToolResult is a tool_result block returned to the model.
type ToolResult struct {
	ToolUseID string
	Content   string
	IsError   bool
	// Structured is the line's tool_use_result, kept only for the task
	// tools (TaskCreate, TaskUpdate, TaskList, TaskGet: their ids and
	// statuses, which a checklist is built from) and the file tools
	// (Write, Edit, MultiEdit: FilePatchOf). Nil for other tools.
	Structured json.RawMessage
}

// PermissionRequest is a can_use_tool control request. The CLI blocks the
// turn until it is answered with Process.RespondPermission.
type PermissionRequest struct {
	RequestID   string
	ToolName    string
	DisplayName string
	Description string
	Input       json.RawMessage
	ToolUseID   string
	BlockedPath string
	// Suggestions are the CLI's permission_suggestions, passed back
	// verbatim as updatedPermissions for "always allow".
	Suggestions []json.RawMessage
	// DecisionReasonType says why the CLI asks, when it says: "mode" is an
	// edit the permission mode forbids (plan mode leaves refusing it to
	// the host, docs/claude-code.md §2).
	DecisionReasonType string
	// RequiresUserInteraction marks a request only a person can answer:
	// AskUserQuestion and ExitPlanMode.
	RequiresUserInteraction bool
}

// PermissionCancel says the CLI withdrew a pending permission request
// (control_cancel_request), e.g. after an interrupt.
type PermissionCancel struct {
	RequestID string
}

// Compaction reports system/status compaction progress.
type Compaction struct {
	// Active is true when compaction starts, false when it ended.
	Active bool
	Result string // "success" or "failed" when it ended
	Error  string // e.g. "exhausted", "too_few_groups"
}

// CompactBoundary is system/compact_boundary after a successful compaction.
type CompactBoundary struct {
	Trigger    string // "auto" or "manual"
	PreTokens  int64
	PostTokens int64
}

// APIRetry is system/api_retry: the CLI is retrying a failed API call.
type APIRetry struct {
	Attempt      int
	MaxRetries   int
	RetryDelayMs int64
	ErrorStatus  int
	Error        string
}

// Malformed is a stdout line that was not valid JSON. The process keeps
// running; callers log it.
type Malformed struct {
	Line string // truncated for logging
	Err  error
}

// Result is the one result event that ends every turn.
type Result struct {
	SessionID      string
	Subtype        string // "success" or "error_during_execution"
	IsError        bool
	Text           string // the result text; "" when the CLI sent none
	Errors         []string
	TerminalReason string // completed, prompt_too_long, api_error, aborted_streaming, aborted_tools
	StopReason     string
	APIErrorStatus int
	NumTurns       int
	DurationMs     int64
	TotalCostUSD   float64 // cumulative for the session
	Usage          Usage   // summed over the turn's API calls; not the context size
	ModelUsage     map[string]ModelUsage
	// ContextTokens is the last non-synthetic assistant event's
	// input+cache_read+cache_creation before this result: the true context
	// size after the turn. Zero when the turn made no API call.
	ContextTokens int64
	// Model is the model of the last assistant event of the turn.
	Model string
	// PermissionDenials lists the tools denied during the turn.
	PermissionDenials []string
	// LimitResetsAt is when a rejected usage window resets, when the CLI
	// reported one during a failed turn (rate_limit_event); see LimitError.
	LimitResetsAt time.Time
	// Origin is what started a turn the CLI ran by itself
	// (OriginTaskNotification); "" for a turn of a message of ours.
	Origin string
}

// ContextWindow is the context window of the turn's model from modelUsage,
// or 0 when the CLI did not report one.
func (r *Result) ContextWindow() int64 {
	if mu, ok := r.ModelUsage[r.Model]; ok && mu.ContextWindow > 0 {
		return mu.ContextWindow
	}
	var best int64
	for _, mu := range r.ModelUsage {
		if mu.ContextWindow > best {
			best = mu.ContextWindow
		}
	}
	return best
}

func (Init) isEvent()              {}
func (AssistantText) isEvent()     {}
func (ToolUse) isEvent()           {}
func (ToolResult) isEvent()        {}
func (PermissionRequest) isEvent() {}
func (PermissionCancel) isEvent()  {}
func (Compaction) isEvent()        {}
func (CompactBoundary) isEvent()   {}
func (APIRetry) isEvent()          {}
func (Malformed) isEvent()         {}
func (*Result) isEvent()           {}
