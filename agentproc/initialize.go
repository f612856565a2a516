package agentproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The start-up handshake. Start sends every process the initialize control
// request before anything else. The CLI answers it, before any user message,
// once it has loaded its settings, tools and commands; until the first user
// message it writes no transcript and calls no API (docs/claude-code.md,
// "Start-up and readiness"). So the answer says that the process is ready
// for a first message, which is how a spare process started ahead of its
// conversation is known to be usable. A turn need not wait for it: stdin is
// read in order, so a user message written right after Start is taken after
// the handshake.

// initRequestID is the request id of the handshake; the ids of later
// control requests count from 1 (Process.control).
const initRequestID = "ccc_0_initialize"

// InitOptions is what the host declares in the initialize request. The zero
// value declares nothing, which the CLI accepts. Fields added here (the SDK
// MCP servers the host serves, for one) must be omitted from the request
// when empty, so that a host that declares nothing sends a bare initialize.
type InitOptions struct {
	// SDKMCPServers names the MCP servers the host serves over stdin and
	// stdout (hosttools.go); Start sets it when the process gets Tools.
	// The CLI takes one initialize only ("Already initialized" after), so
	// the handshake is where the host's tools are declared.
	SDKMCPServers []string
}

// request is the initialize control request for o.
func (o InitOptions) request() map[string]any {
	req := map[string]any{"subtype": "initialize"}
	if len(o.SDKMCPServers) > 0 {
		req["sdkMcpServers"] = o.SDKMCPServers
	}
	return req
}

// InitInfo is the CLI's answer to initialize: the fields cc-connect reads,
// and the whole answer in Raw (commands, agents, models, account, …).
type InitInfo struct {
	// PID is the CLI's own process id.
	PID int `json:"pid"`
	// Version is the CLI's version, e.g. "2.1.332".
	Version string `json:"claude_code_version"`
	// PermissionMode is the mode the process runs in ("default", "plan", …).
	PermissionMode string `json:"current_permission_mode"`
	// SessionState is "idle" when the CLI waits for a user message.
	SessionState string `json:"session_state"`
	// Raw is the answer as the CLI sent it.
	Raw json.RawMessage `json:"-"`
}

// ErrNotReady wraps the reason a process never answered initialize: it
// exited first (an *ExitError, or ErrClosed for a clean exit). A caller
// that started the process ahead of use closes it and starts another.
var ErrNotReady = errors.New("agent process was not ready")

// handshake is the state of one process's initialize request.
type handshake struct {
	once  sync.Once
	ready chan struct{} // closed once info or err is set
	info  *InitInfo
	err   error
	// started is when the process was started: the handshake measures
	// the time to ready from there.
	started time.Time
}

func newHandshake() handshake { return handshake{ready: make(chan struct{}), started: time.Now()} }

// settle records the outcome; only the first one counts.
func (h *handshake) settle(info *InitInfo, err error) bool {
	first := false
	h.once.Do(func() {
		h.info, h.err, first = info, err, true
		close(h.ready)
	})
	return first
}

// sendInitialize writes the handshake. A write that fails means the process
// is gone or going; its end settles the handshake with the reason.
func (p *Process) sendInitialize(ctx context.Context, o InitOptions) {
	msg := map[string]any{"type": "control_request", "request_id": initRequestID, "request": o.request()}
	if err := p.writeJSON(ctx, msg); err != nil {
		p.log.Debug("Writing initialize to the agent failed", "pid", p.pid, "error", err)
	}
}

// answerInitialize takes the CLI's answer to the handshake, on the reader
// goroutine.
func (p *Process) answerInitialize(r controlReply) {
	if !r.ok {
		p.init.settle(nil, &ControlError{Subtype: "initialize", Message: r.err})
		p.log.Warn("Agent refused initialize", "pid", p.pid, "error", r.err)
		return
	}
	info := &InitInfo{Raw: r.response}
	if err := json.Unmarshal(r.response, info); err != nil {
		// The answer came, so the CLI is ready; only its details are
		// unreadable.
		p.log.Warn("Agent's initialize answer is unreadable", "pid", p.pid, "error", err)
	}
	if p.init.settle(info, nil) {
		p.log.Debug("Agent process ready", "pid", p.pid, "version", info.Version,
			"after", time.Since(p.init.started).Round(time.Millisecond))
	}
}

// endInitialize settles a handshake the CLI never answered, once its
// stdout has ended.
func (p *Process) endInitialize() {
	cause := p.err
	if cause == nil {
		cause = ErrClosed
	}
	p.init.settle(nil, fmt.Errorf("%w: it exited before answering initialize: %w", ErrNotReady, cause))
}

// Ready is closed once the CLI answered the initialize request that Start
// sent, or its process ended without answering. WaitReady says which.
func (p *Process) Ready() <-chan struct{} { return p.init.ready }

// WaitReady waits for the answer to the start-up handshake and returns it.
// An error wrapping ErrNotReady means the process exited first; a
// *ControlError that the CLI refused the request; ctx's error that ctx
// ended first (the process is left as it is).
func (p *Process) WaitReady(ctx context.Context) (*InitInfo, error) {
	select {
	case <-p.init.ready:
		return p.init.info, p.init.err
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the agent to be ready: %w", ctx.Err())
	}
}
