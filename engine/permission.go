package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/platform"
)

// pendingPerm is a permission request waiting for an answer in the chat.
type pendingPerm struct {
	req         agentproc.PermissionRequest
	prompt      platform.Target // the posted prompt
	viaPrompter bool
	deadline    time.Time
	asked       time.Time // for the wait metric
	choice      string    // how it ended, for the metrics; "" = cancelled
}

// askPermission posts a permission request (buttons when the platform has
// them, else text with the !allow / !deny hint) and waits for an answer, a
// cancel from the CLI or the timeout. The approver sees the whole request
// (approvalFor): a request too big to show, or whose whole command could
// not be posted, is denied without asking.
func (s *session) askPermission(t *turn, proc agentProcess, req agentproc.PermissionRequest) {
	p := &pendingPerm{req: req, asked: time.Now()}
	s.e.metrics.PermissionRequested()
	if d := s.e.opts.PermissionTimeout; d > 0 {
		p.deadline = time.Now().Add(d)
	}
	t.perms = append(t.perms, p)
	s.e.mu.Lock()
	s.e.requests[req.RequestID] = s.key
	s.e.mu.Unlock()
	s.mu.Lock()
	s.state = stateRequiresAction
	s.pending = req.RequestID
	s.mu.Unlock()

	s.log.Info("Permission requested", "session_id", s.sessionID(), "request_id", req.RequestID, "tool", req.ToolName, "blocked_path", req.BlockedPath)
	view := approvalFor(req)
	for _, whole := range view.whole {
		if view.refuse != "" {
			break
		}
		if posted := s.send(s.e.bg, whole); posted.MessageID == "" {
			view.refuse = "cc-connect could not post the whole request in the chat, so nobody could review it: the request was denied without asking."
		}
	}
	if view.refuse != "" {
		s.log.Warn("Permission request denied without asking: it cannot be shown whole", "request_id", req.RequestID, "tool", req.ToolName)
		p.choice = "unshown"
		if err := s.respond(proc, req.RequestID, agentproc.PermissionDecision{Behavior: agentproc.Deny, Message: view.refuse}); err != nil {
			s.log.Error("Denying the permission request failed", "request_id", req.RequestID, "error", err)
		}
		s.resolvePermission(t, p, "denied: "+strings.TrimSuffix(view.refuse, "."))
		return
	}
	if pr, ok := s.chat().(platform.Prompter); ok {
		posted, err := pr.AskPermission(s.e.bg, s.to, platform.PermissionPrompt{
			RequestID: req.RequestID, Tool: req.ToolName, Text: view.prompt,
		})
		if err == nil {
			p.prompt, p.viaPrompter = posted, true
			s.armPermTimer(t)
			return
		}
		s.log.Warn("Posting the permission prompt failed; falling back to text", "error", err)
	}
	p.prompt = s.send(s.e.bg, view.prompt+"\nReply !allow, !allow always, or !deny.")
	s.armPermTimer(t)
}

// armPermTimer points the turn's permission timer at the earliest deadline.
func (s *session) armPermTimer(t *turn) {
	if t.permT != nil {
		t.permT.Stop()
		t.permT = nil
	}
	var first time.Time
	for _, p := range t.perms {
		if !p.deadline.IsZero() && (first.IsZero() || p.deadline.Before(first)) {
			first = p.deadline
		}
	}
	if !first.IsZero() {
		t.permT = time.NewTimer(max(0, time.Until(first)))
	}
}

func (t *turn) findPerm(id string) *pendingPerm {
	for _, p := range t.perms {
		if id == "" || p.req.RequestID == id {
			return p
		}
	}
	return nil
}

// resolvePermission forgets a pending request and shows its outcome on the
// prompt (or as a message).
func (s *session) resolvePermission(t *turn, p *pendingPerm, outcome string) {
	for i, q := range t.perms {
		if q == p {
			t.perms = append(t.perms[:i], t.perms[i+1:]...)
			break
		}
	}
	s.e.mu.Lock()
	delete(s.e.requests, p.req.RequestID)
	s.e.mu.Unlock()
	s.e.metrics.PermissionAnswered(orDefault(p.choice, "cancelled"), time.Since(p.asked))
	s.mu.Lock()
	s.pending = ""
	if len(t.perms) > 0 {
		s.pending = t.perms[0].req.RequestID
	} else if s.state == stateRequiresAction {
		s.state = stateRunning
	}
	s.mu.Unlock()
	s.armPermTimer(t)

	tool := orDefault(p.req.DisplayName, p.req.ToolName)
	if pr, ok := s.chat().(platform.Prompter); ok && p.viaPrompter {
		if err := pr.ResolvePermission(s.e.bg, p.prompt, outcome); err != nil {
			s.log.Warn("Resolving the permission prompt failed", "error", err)
		}
		return
	}
	s.send(s.e.bg, fmt.Sprintf("Permission for %s: %s.", tool, outcome))
}

func (s *session) answerPermission(t *turn, proc agentProcess, c control) {
	p := t.findPerm(c.requestID)
	if p == nil {
		s.sendTo(s.e.bg, c.to, "That permission request is no longer pending.")
		return
	}
	who := orDefault(c.userName, "someone")
	d := agentproc.PermissionDecision{Behavior: agentproc.Deny, Message: "Denied by " + who + " in chat."}
	switch c.choice {
	case platform.ChoiceAllow:
		d = agentproc.PermissionDecision{Behavior: agentproc.Allow}
	case platform.ChoiceAlwaysAllow:
		d = agentproc.PermissionDecision{Behavior: agentproc.AlwaysAllow}
	}
	if err := s.respond(proc, p.req.RequestID, d); err != nil {
		if errors.Is(err, agentproc.ErrNoPendingPermission) {
			s.resolvePermission(t, p, "cancelled before the answer arrived")
			return
		}
		s.log.Error("Answering the permission request failed", "request_id", p.req.RequestID, "error", err)
		p.choice = "error"
		s.resolvePermission(t, p, fmt.Sprintf("%s by %s, but the answer could not be delivered (%s)", describe(d.Behavior), who, s.forChat(err.Error())))
		return
	}
	s.log.Info("Permission answered", "request_id", p.req.RequestID, "tool", p.req.ToolName, "decision", d.Behavior.String(), "user", who)
	p.choice = permissionChoice(d.Behavior)
	s.resolvePermission(t, p, fmt.Sprintf("%s by %s", describe(d.Behavior), who))
}

// permissionTimeout denies every request whose deadline has passed.
func (s *session) permissionTimeout(t *turn, proc agentProcess) {
	now := time.Now()
	for _, p := range append([]*pendingPerm(nil), t.perms...) {
		if p.deadline.IsZero() || p.deadline.After(now) {
			continue
		}
		after := s.e.opts.PermissionTimeout
		msg := fmt.Sprintf("No answer in chat within %s; the request was denied.", after)
		if err := s.respond(proc, p.req.RequestID, agentproc.PermissionDecision{Behavior: agentproc.Deny, Message: msg}); err != nil {
			s.log.Error("Denying the timed-out permission request failed", "request_id", p.req.RequestID, "error", err)
		}
		s.log.Info("Permission request timed out", "request_id", p.req.RequestID, "tool", p.req.ToolName, "timeout", after)
		p.choice = "timeout"
		s.resolvePermission(t, p, fmt.Sprintf("denied: no answer within %s", after))
	}
	s.armPermTimer(t)
}

// cancelPermission resolves a request the CLI withdrew.
func (s *session) cancelPermission(t *turn, id string) {
	if p := t.findPerm(id); p != nil && id != "" {
		s.resolvePermission(t, p, "cancelled")
	}
}

// endPermissions resolves whatever is still pending when the turn ends.
func (s *session) endPermissions(t *turn, why string) {
	for len(t.perms) > 0 {
		s.resolvePermission(t, t.perms[0], "cancelled: "+why)
	}
	if t.permT != nil {
		t.permT.Stop()
		t.permT = nil
	}
}

// toolSummary is a short human line for a tool call: "Bash `go test ./...`",
// for progress and the restart notice. It is cut: a prompt shows the whole
// request (approvalFor).
func toolSummary(name string, input json.RawMessage) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	arg := ""
	for _, k := range []string{"command", "file_path", "path", "pattern", "url", "query", "description"} {
		if v, ok := in[k].(string); ok && v != "" {
			arg = v
			break
		}
	}
	if arg == "" {
		return name
	}
	arg = strings.ReplaceAll(quote(visible(arg), 120), "`", "'")
	return fmt.Sprintf("%s `%s`", name, arg)
}

// describe says what a decision did, for the resolved prompt.
func describe(b agentproc.Behavior) string {
	switch b {
	case agentproc.Allow:
		return "allowed once"
	case agentproc.AlwaysAllow:
		return "always allowed"
	case agentproc.DenyAndStop:
		return "denied and stopped"
	default:
		return "denied"
	}
}

func (s *session) respond(proc agentProcess, requestID string, d agentproc.PermissionDecision) error {
	ctx, cancel := context.WithTimeout(s.e.bg, controlTimeout)
	defer cancel()
	return proc.RespondPermission(ctx, requestID, d)
}
