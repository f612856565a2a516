package agentproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
)

// Behavior is how a permission request is answered. The zero value is not a
// valid answer, so a forgotten field can never allow a tool.
type Behavior int

const (
	// Allow runs the tool once, with the original input unless
	// PermissionDecision.Input replaces it.
	Allow Behavior = iota + 1
	// AlwaysAllow runs the tool and adds the CLI's suggested allow rules,
	// so the same call is not asked again.
	AlwaysAllow
	// Deny refuses the tool; the model sees Message and the turn goes on.
	Deny
	// DenyAndStop refuses the tool and ends the turn (aborted_tools).
	DenyAndStop
)

func (b Behavior) String() string {
	switch b {
	case Allow:
		return "allow"
	case AlwaysAllow:
		return "always_allow"
	case Deny:
		return "deny"
	case DenyAndStop:
		return "deny_and_stop"
	}
	return fmt.Sprintf("Behavior(%d)", int(b))
}

// PermissionDecision answers one PermissionRequest.
type PermissionDecision struct {
	Behavior Behavior
	// Message is what the model is told on Deny and DenyAndStop.
	Message string
	// Input, when set with Allow or AlwaysAllow, replaces the tool input.
	// An AskUserQuestion is answered this way: its input with "answers"
	// added (docs/claude-code.md §1).
	Input json.RawMessage
	// SetMode, when set with Allow, also switches the session's permission
	// mode (updatedPermissions setMode, destination session): how an
	// approved ExitPlanMode continues in acceptEdits rather than default.
	SetMode string
}

// ErrNoPendingPermission is returned by RespondPermission when the request is
// not waiting for an answer: the CLI cancelled it (after an interrupt), it
// was answered already, or it never existed. Callers drop their prompt.
var ErrNoPendingPermission = errors.New("no pending permission request")

// defaultDenyMessage is what the model sees when a deny carries no text.
const defaultDenyMessage = "The user denied this tool use."

// ControlError is the CLI's error answer to one of our control requests.
type ControlError struct {
	Subtype string // the request's subtype, e.g. "set_model"
	Message string // the CLI's error text
}

func (e *ControlError) Error() string {
	return fmt.Sprintf("control request %s failed: %s", e.Subtype, e.Message)
}

// controls is the control protocol of one Process (PROTOCOL.md §4): the
// requests cc-connect sends and waits on (interrupt, set_model,
// set_permission_mode), the permission requests the CLI waits on, and the
// refusal of requests nobody serves. Process embeds it, so Interrupt,
// SetModel, SetPermissionMode and RespondPermission are the Process's; the
// reader hands it each decoded line's control traffic (handle).
type controls struct {
	write   func(ctx context.Context, v any) error // one whole line on stdin
	done    <-chan struct{}                        // closed once the process is reaped
	log     *slog.Logger
	session func() string // the session id, for logs
	strays  *sync.WaitGroup
	// stopped is told of a task stop_task ended, once the CLI confirmed
	// it (Process: its background tasks); nil tells nobody.
	stopped func(taskID string)

	nextID atomic.Uint64

	mu      sync.Mutex // guards the fields below
	pending map[string]chan controlReply
	perms   map[string]*pendingPerm
	exited  bool
}

func newControls(write func(context.Context, any) error, done <-chan struct{}, log *slog.Logger,
	session func() string, strays *sync.WaitGroup) *controls {
	return &controls{
		write: write, done: done, log: log, session: session, strays: strays,
		pending: make(map[string]chan controlReply),
		perms:   make(map[string]*pendingPerm),
	}
}

// end forgets the pending permission requests once the process is gone and
// refuses control requests from then on.
func (c *controls) end() {
	c.mu.Lock()
	c.exited = true
	c.perms = map[string]*pendingPerm{}
	c.mu.Unlock()
}

// pendingPerm is a can_use_tool request waiting for RespondPermission.
type pendingPerm struct {
	input       json.RawMessage
	suggestions []json.RawMessage
}

// Interrupt stops the running turn (control_request interrupt) and waits for
// the CLI's acknowledgement. The turn then ends with an error_during_execution
// result, which Turn returns; the process stays alive. Interrupting an idle
// process is harmless.
func (c *controls) Interrupt(ctx context.Context) error {
	_, err := c.control(ctx, "interrupt", nil)
	return err
}

// StopTask stops a running task, a background one too (control
// stop_task). The CLI reports its end with task_updated and
// task_notification, and its list of background tasks without it, after
// its answer: the task leaves Background as the answer comes, so that
// what runs is not misreported meanwhile.
func (c *controls) StopTask(ctx context.Context, taskID string) error {
	_, err := c.control(ctx, "stop_task", map[string]any{"task_id": taskID})
	if err == nil && c.stopped != nil {
		c.stopped(taskID)
	}
	return err
}

// SetModel switches the model for the following turns (control set_model).
func (c *controls) SetModel(ctx context.Context, model string) error {
	_, err := c.control(ctx, "set_model", map[string]any{"model": model})
	return err
}

// SetPermissionMode switches the permission mode (control
// set_permission_mode), e.g. "default" or "acceptEdits".
func (c *controls) SetPermissionMode(ctx context.Context, mode string) error {
	_, err := c.control(ctx, "set_permission_mode", map[string]any{"mode": mode})
	return err
}

// RespondPermission answers a PermissionRequest. Answering a request the CLI
// cancelled or that was already answered returns ErrNoPendingPermission and
// writes nothing.
func (c *controls) RespondPermission(ctx context.Context, requestID string, d PermissionDecision) error {
	var resp map[string]any
	c.mu.Lock()
	pp, ok := c.perms[requestID]
	if ok {
		var err error
		resp, err = permissionResponse(pp, d)
		if err != nil {
			c.mu.Unlock()
			return err
		}
		// Forget it before writing: a second answer must fail even if
		// this write is still in flight.
		delete(c.perms, requestID)
	}
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("answering permission request %s: %w", requestID, ErrNoPendingPermission)
	}
	msg := map[string]any{
		"type": "control_response",
		"response": map[string]any{
			"subtype":    "success",
			"request_id": requestID,
			"response":   resp,
		},
	}
	if err := c.write(ctx, msg); err != nil {
		return fmt.Errorf("answering permission request %s: %w", requestID, err)
	}
	c.log.Debug("Permission answered", "request_id", requestID, "behavior", d.Behavior.String(),
		"session_id", c.session())
	return nil
}

// permissionResponse builds the can_use_tool answer (PROTOCOL.md §4).
func permissionResponse(pp *pendingPerm, d PermissionDecision) (map[string]any, error) {
	switch d.Behavior {
	case Allow, AlwaysAllow:
		input := pp.input
		if len(d.Input) > 0 {
			input = d.Input
		}
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		resp := map[string]any{"behavior": "allow", "updatedInput": input}
		var perms []json.RawMessage
		if d.Behavior == AlwaysAllow {
			perms = alwaysAllowRules(pp.suggestions)
		}
		if d.SetMode != "" {
			mode, err := json.Marshal(map[string]string{"type": "setMode", "mode": d.SetMode, "destination": "session"})
			if err != nil {
				return nil, fmt.Errorf("answering permission request: %w", err)
			}
			perms = append(perms, mode)
		}
		if len(perms) > 0 {
			resp["updatedPermissions"] = perms
		}
		return resp, nil
	case Deny, DenyAndStop:
		msg := d.Message
		if msg == "" {
			msg = defaultDenyMessage
		}
		resp := map[string]any{"behavior": "deny", "message": msg}
		if d.Behavior == DenyAndStop {
			resp["interrupt"] = true
		}
		return resp, nil
	}
	return nil, fmt.Errorf("answering permission request: invalid behavior %v", d.Behavior)
}

// alwaysAllowRules picks the suggestions that allow this call from now on.
// The CLI also suggests widening directories and switching the whole session
// to acceptEdits; "always allow this" must not silently grant those, so only
// addRules suggestions are passed back, or the first suggestion when there
// is no rule to add.
func alwaysAllowRules(suggestions []json.RawMessage) []json.RawMessage {
	var rules []json.RawMessage
	for _, s := range suggestions {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(s, &head) == nil && head.Type == "addRules" {
			rules = append(rules, s)
		}
	}
	if len(rules) == 0 && len(suggestions) > 0 {
		rules = suggestions[:1]
	}
	return rules
}

// control sends one control request and waits for its control_response.
func (c *controls) control(ctx context.Context, subtype string, fields map[string]any) (json.RawMessage, error) {
	id := fmt.Sprintf("ccc_%d_%s", c.nextID.Add(1), subtype)
	req := map[string]any{"subtype": subtype}
	for k, v := range fields {
		req[k] = v
	}
	ch := make(chan controlReply, 1)
	c.mu.Lock()
	if c.exited {
		c.mu.Unlock()
		return nil, fmt.Errorf("control request %s: %w", subtype, ErrClosed)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()

	msg := map[string]any{"type": "control_request", "request_id": id, "request": req}
	if err := c.write(ctx, msg); err != nil {
		return nil, fmt.Errorf("control request %s: %w", subtype, err)
	}
	select {
	case r := <-ch:
		if !r.ok {
			return nil, &ControlError{Subtype: subtype, Message: r.err}
		}
		return r.response, nil
	case <-c.done:
		return nil, fmt.Errorf("control request %s: %w", subtype, ErrClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("control request %s: %w", subtype, ctx.Err())
	}
}

// handleControl routes the control traffic of one decoded line. It runs on
// the reader goroutine and never blocks on the CLI.
func (p *Process) handleControl(d *decoded) {
	switch {
	case d.replyID == initRequestID:
		p.answerInitialize(d.reply)
	case d.mcp != nil:
		p.handleMCP(d.mcp)
	default:
		p.controls.handle(d)
	}
}

// handle takes a line's answer to one of our requests, a permission request
// or its withdrawal, or a request nobody serves. It runs on the reader
// goroutine and never blocks on the CLI.
func (c *controls) handle(d *decoded) {
	switch {
	case d.replyID != "":
		c.mu.Lock()
		ch, ok := c.pending[d.replyID]
		c.mu.Unlock()
		if ok {
			ch <- d.reply // buffered, one reply per id
		}
	case d.perm != nil:
		c.mu.Lock()
		c.perms[d.perm.RequestID] = &pendingPerm{input: d.perm.Input, suggestions: d.perm.Suggestions}
		c.mu.Unlock()
	case d.cancelID != "":
		c.mu.Lock()
		delete(c.perms, d.cancelID)
		c.mu.Unlock()
	case d.unsupported != "":
		// The CLI waits for an answer to every request it sends; say no
		// rather than leave it hanging. Written from its own goroutine so
		// a full stdin pipe can never stall stdout reading.
		msg := map[string]any{
			"type": "control_response",
			"response": map[string]any{
				"subtype":    "error",
				"request_id": d.unsupported,
				"error":      "Unsupported control request subtype: " + d.unsupportedType,
			},
		}
		c.log.Debug("Refusing agent control request", "subtype", d.unsupportedType, "session_id", c.session())
		c.strays.Add(1)
		go func() {
			defer c.strays.Done()
			_ = c.write(context.Background(), msg)
		}()
	}
}
