package conv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

// permissions are the permission requests of one running turn waiting for
// an answer in the chat: posted as buttons where the platform has them,
// else as text with the !allow / !deny hint, and answered by a press, a
// command, the CLI withdrawing them, or the timeout. It lives on the
// session goroutine for the length of one turn.
type permissions struct {
	chat    *relay
	log     *slog.Logger
	metrics Metrics
	timeout time.Duration // 0 = never
	// register and unregister route button presses (by request id) to
	// this conversation; setWaiting says whether it waits on one.
	register, unregister func(requestID string)
	setWaiting           func(bool)
	// awaitText says whether a plain reply in the thread answers a
	// pending question or plan (asks.go).
	awaitText func(bool)
	// lateReply takes a reply that came for a question or a plan that is
	// no longer pending (turnRunner.lateReply).
	lateReply func(control)
	// allowEdits says a plan may be approved into acceptEdits (an
	// allowed mode).
	allowEdits bool
	// planMode says the conversation is in plan mode now.
	planMode func() bool
	forChat  func(string) string // keeps host paths out of what is posted
	// ring, when set, mentions the person who asked once a prompt is
	// posted (notify_mention), so that their phone rings.
	ring func(tool string)
	// act publishes each request and how it ended (activity.go).
	act feed

	pending []*pendingPerm
	timer   *time.Timer // fires at the earliest deadline
	// reminder is how long a request waits before the approvers are
	// mentioned, once (0: never); remindTimer fires at the earliest
	// reminder due, and remindRing mentions them.
	reminder    time.Duration
	remindTimer *time.Timer
	remindRing  func(what string)
	// preset are answers given while no process ran (parked.go): a request
	// the resumed CLI makes again is answered with them.
	preset []parkedRequest
	// share, when set, keeps the requests in the cluster for the
	// binding's next holder (approvals.go), given the answers of this
	// turn (given) and what still waits.
	share func()
	given []parkedRequest
}

// pendingPerm is a permission request waiting for an answer in the chat.
type pendingPerm struct {
	req         agentproc.PermissionRequest
	prompt      platform.Target // the posted prompt
	viaPrompter bool
	deadline    time.Time
	asked       time.Time // for the wait metric
	choice      string    // how it ended, for the metrics; "" = cancelled
	// byID and byName are who answered it, for the activity feed; ""
	// when nobody did (a timeout, the CLI withdrew it).
	byID, byName string
	// answer is what a question's answers or a plan's feedback said.
	answer string
	// qs is the question set of an AskUserQuestion; plan marks an
	// ExitPlanMode (asks.go).
	qs   *questionSet
	plan bool
	// reminded: the approvers were mentioned about it (reminder).
	reminded bool
}

// responder is what the desk needs of the process: its answers. While no
// process runs (parked.go) a stand-in takes them.
type responder interface {
	RespondPermission(ctx context.Context, requestID string, d agentproc.PermissionDecision) error
}

// newPermissions gives a turn its permission desk.
func (tr *turnRunner) newPermissions() *permissions {
	e, key := tr.e, tr.key
	return &permissions{chat: tr.chat, log: tr.log, metrics: e.metrics, timeout: e.opts.PermissionTimeout, forChat: tr.forChat,
		reminder:  e.opts.ApprovalReminder,
		lateReply: tr.lateReply, act: tr.act,
		allowEdits: slices.Contains(e.cfg.modesFor(tr.binding()), "acceptEdits"),
		planMode:   func() bool { return e.cfg.modeOf(tr.rb.get(), tr.binding()) == "plan" },
		awaitText: func(on bool) {
			if tr.awaitText != nil {
				tr.awaitText.Store(on)
			}
		},
		register: func(id string) {
			e.mu.Lock()
			e.requests[id] = key
			e.mu.Unlock()
		},
		unregister: func(id string) {
			e.mu.Lock()
			delete(e.requests, id)
			e.mu.Unlock()
		},
		setWaiting: func(waiting bool) {
			if waiting {
				tr.mb.setState(stateRequiresAction)
			} else {
				tr.mb.setState(stateRunning)
			}
		}}
}

// first names the oldest pending request ("" when none), for the record.
func (ps *permissions) first() string {
	if len(ps.pending) == 0 {
		return ""
	}
	if name := specialName(ps.pending[0]); name != "" {
		return name
	}
	p := ps.pending[0].req
	return render.ToolSummary(p.ToolName, p.Input)
}

// ask posts a permission request and waits for an answer, a cancel from
// the CLI or the timeout.
// The approver sees the whole request (render.ApprovalOf): a request too big to
// show, or whose whole command could not be posted, is denied without
// asking.
func (ps *permissions) ask(proc responder, req agentproc.PermissionRequest) {
	if ps.presetAnswer(proc, req) {
		return
	}
	p := &pendingPerm{req: req, asked: time.Now()}
	ps.metrics.PermissionRequested()
	if ps.timeout > 0 {
		p.deadline = time.Now().Add(ps.timeout)
	}
	ps.pending = append(ps.pending, p)
	ps.register(req.RequestID)
	ps.setWaiting(true)
	if ps.share != nil {
		ps.share() // before the prompt: a kill right after its post finds it
	}

	ps.log.Info("Permission requested", "request_id", req.RequestID, "tool", req.ToolName, "blocked_path", req.BlockedPath)
	ps.act.record(activity.Event{Kind: activity.Asking, Tool: req.ToolName, Input: inputSummary(req.Input), Request: req.RequestID,
		Questions: questionsOf(req.ToolName, req.Input)})
	if ps.askSpecial(proc, p) {
		return
	}
	view := render.ApprovalOf(render.Request{Tool: req.ToolName, DisplayName: req.DisplayName, Input: req.Input, BlockedPath: req.BlockedPath})
	for _, whole := range view.Whole {
		if view.Refuse != "" {
			break
		}
		if posted := ps.chat.send(whole); posted.MessageID == "" {
			view.Refuse = render.NotPostedWhole
		}
	}
	if view.Refuse != "" {
		ps.log.Warn("Permission request denied without asking: it cannot be shown whole", "request_id", req.RequestID, "tool", req.ToolName)
		p.choice = "unshown"
		if err := ps.respond(proc, req, agentproc.PermissionDecision{Behavior: agentproc.Deny, Message: view.Refuse}); err != nil {
			ps.log.Error("Denying the permission request failed", "request_id", req.RequestID, "error", err)
		}
		ps.resolve(p, "denied: "+strings.TrimSuffix(view.Refuse, "."))
		return
	}
	if posted, ok := ps.chat.askPermission(platform.PermissionPrompt{
		RequestID: req.RequestID, Tool: req.ToolName, Text: view.Prompt,
	}); ok {
		p.prompt, p.viaPrompter = posted, true
		ps.arm()
		ps.rung(req.ToolName)
		return
	}
	p.prompt = ps.chat.send(view.Prompt + render.ApprovalHint)
	ps.arm()
	ps.rung(req.ToolName)
}

func (ps *permissions) rung(tool string) {
	if ps.ring != nil {
		ps.ring(tool)
	}
}

// arm points the timer at the earliest deadline.
func (ps *permissions) arm() {
	if ps.timer != nil {
		ps.timer.Stop()
		ps.timer = nil
	}
	var first time.Time
	for _, p := range ps.pending {
		if !p.deadline.IsZero() && (first.IsZero() || p.deadline.Before(first)) {
			first = p.deadline
		}
	}
	if !first.IsZero() {
		ps.timer = time.NewTimer(max(0, time.Until(first)))
	}
	ps.armReminder()
}

// armReminder points remindTimer at the earliest reminder due: a request
// not yet reminded of, whose reminder comes before its deadline.
func (ps *permissions) armReminder() {
	if ps.remindTimer != nil {
		ps.remindTimer.Stop()
		ps.remindTimer = nil
	}
	if ps.reminder <= 0 || ps.remindRing == nil {
		return
	}
	var first time.Time
	for _, p := range ps.pending {
		at := p.asked.Add(ps.reminder)
		if p.reminded || (!p.deadline.IsZero() && !at.Before(p.deadline)) {
			continue
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if !first.IsZero() {
		ps.remindTimer = time.NewTimer(max(0, time.Until(first)))
	}
}

// remind mentions the approvers, once per request, of the requests that
// waited reminder.
func (ps *permissions) remind() {
	now := time.Now()
	for _, p := range ps.pending {
		if p.reminded || p.asked.Add(ps.reminder).After(now) {
			continue
		}
		p.reminded = true
		what := "a permission request above has waited " + ps.reminder.String() + " for an answer."
		switch {
		case p.qs != nil:
			what = "Claude's question above has waited " + ps.reminder.String() + " for an answer."
		case p.plan:
			what = "Claude's plan above has waited " + ps.reminder.String() + " for approval."
		}
		ps.log.Info("Reminding the approvers of a waiting request", "request_id", p.req.RequestID, "tool", p.req.ToolName)
		ps.remindRing(what)
	}
	ps.armReminder()
}

// stopTimers stops the desk's timers.
func (ps *permissions) stopTimers() {
	for _, t := range []*time.Timer{ps.timer, ps.remindTimer} {
		if t != nil {
			t.Stop()
		}
	}
	ps.timer, ps.remindTimer = nil, nil
}

func (ps *permissions) find(id string) *pendingPerm {
	for _, p := range ps.pending {
		if id == "" || p.req.RequestID == id {
			return p
		}
	}
	return nil
}

// resolve forgets a pending request and shows its outcome on the prompt
// (or as a message).
func (ps *permissions) resolve(p *pendingPerm, outcome string) {
	for i, q := range ps.pending {
		if q == p {
			ps.pending = append(ps.pending[:i], ps.pending[i+1:]...)
			break
		}
	}
	ps.unregister(p.req.RequestID)
	ps.metrics.PermissionAnswered(orDefault(p.choice, "cancelled"), time.Since(p.asked))
	ps.answered(p, outcome)
	if len(ps.pending) == 0 {
		ps.setWaiting(false)
	}
	ps.arm()
	ps.setAwait()
	if ps.showOutcome(p, outcome) {
		return
	}
	if p.viaPrompter {
		ps.chat.resolvePermission(p.prompt, outcome)
		return
	}
	ps.chat.send(render.Resolved(orDefault(p.req.DisplayName, p.req.ToolName), outcome))
}

// answer passes a chat answer (a button, !allow, !deny) to the CLI.
func (ps *permissions) answer(proc responder, c control) {
	if ps.answerSpecial(proc, c) {
		return
	}
	p := ps.find(c.requestID)
	if p == nil {
		ps.chat.sendTo(c.to, render.PermissionGone)
		return
	}
	who := orDefault(c.userName, "someone")
	p.byID, p.byName = c.userID, c.userName
	d := agentproc.PermissionDecision{Behavior: agentproc.Deny, Message: "Denied by " + who + " in chat."}
	switch c.choice {
	case platform.ChoiceAllow, platform.ChoicePlanAcceptEdits: // "!allow edits" typed for a plain request
		d = agentproc.PermissionDecision{Behavior: agentproc.Allow}
	case platform.ChoiceAlwaysAllow:
		d = agentproc.PermissionDecision{Behavior: agentproc.AlwaysAllow}
	}
	if err := ps.respond(proc, p.req, d); err != nil {
		if errors.Is(err, agentproc.ErrNoPendingPermission) {
			ps.resolve(p, "cancelled before the answer arrived")
			return
		}
		ps.log.Error("Answering the permission request failed", "request_id", p.req.RequestID, "error", err)
		p.choice = "error"
		ps.resolve(p, fmt.Sprintf("%s by %s, but the answer could not be delivered (%s)", describe(d.Behavior), who, ps.forChat(err.Error())))
		return
	}
	ps.log.Info("Permission answered", "request_id", p.req.RequestID, "tool", p.req.ToolName, "decision", d.Behavior.String(), "user_name", who)
	p.choice = permissionChoice(d.Behavior)
	ps.resolve(p, fmt.Sprintf("%s by %s", describe(d.Behavior), who))
}

// answered publishes how a request ended, and who ended it.
func (ps *permissions) answered(p *pendingPerm, outcome string) {
	ps.act.record(activity.Event{Kind: activity.Answered, User: p.byID, UserName: p.byName, Tool: p.req.ToolName,
		Input: p.answer, Choice: orDefault(p.choice, "cancelled"), Outcome: outcome, Request: p.req.RequestID})
}

// expire denies every request whose deadline has passed.
func (ps *permissions) expire(proc responder) {
	now := time.Now()
	for _, p := range append([]*pendingPerm(nil), ps.pending...) {
		if p.deadline.IsZero() || p.deadline.After(now) {
			continue
		}
		msg := fmt.Sprintf("No answer in chat within %s; the request was denied.", ps.timeout)
		if p.qs != nil || p.plan {
			msg = fmt.Sprintf("No answer in chat within %s; the user did not answer.", ps.timeout)
		}
		if err := ps.respond(proc, p.req, agentproc.PermissionDecision{Behavior: agentproc.Deny, Message: msg}); err != nil {
			ps.log.Error("Denying the timed-out permission request failed", "request_id", p.req.RequestID, "error", err)
		}
		ps.log.Info("Permission request timed out", "request_id", p.req.RequestID, "tool", p.req.ToolName, "timeout", ps.timeout)
		p.choice = "timeout"
		if p.qs != nil || p.plan {
			ps.resolve(p, fmt.Sprintf("No answer within %s.", ps.timeout))
			continue
		}
		ps.resolve(p, fmt.Sprintf("denied: no answer within %s", ps.timeout))
	}
	ps.arm()
}

// cancel resolves a request the CLI withdrew.
func (ps *permissions) cancel(id string) {
	if p := ps.find(id); p != nil && id != "" {
		ps.resolve(p, "cancelled")
	}
}

// endAll resolves whatever is still pending when the turn ends.
func (ps *permissions) endAll(why string) {
	for len(ps.pending) > 0 {
		ps.resolve(ps.pending[0], "cancelled: "+why)
	}
	ps.stopTimers()
}

// respond answers req, keeping the answer for the binding's next holder
// when the requests travel (share).
func (ps *permissions) respond(proc responder, req agentproc.PermissionRequest, d agentproc.PermissionDecision) error {
	err := respond(proc, req.RequestID, d)
	if err == nil && ps.share != nil {
		ps.given = append(ps.given, parkedRequest{Req: req, Answer: &d, Outcome: outcomeOf(d)})
	}
	return err
}

func respond(proc responder, requestID string, d agentproc.PermissionDecision) error {
	ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
	defer cancel()
	return proc.RespondPermission(ctx, requestID, d)
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
