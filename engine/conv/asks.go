package conv

import (
	"errors"
	"fmt"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

// Claude's questions (AskUserQuestion) and plans (ExitPlanMode) reach
// cc-connect as permission requests the CLI marks as needing a person; the
// permission desk shows them for what they are and answers them as the CLI
// expects (docs/claude-code.md §1, §2): a question with its answers as the
// tool's input, a plan with an allow (and a mode to go on in) or a deny
// whose message is the user's feedback. They time out like permission
// requests, and a restart names them in its notice as it does a request.

// What Claude is told of its question or plan (a person's texts are
// render's).
const (
	dismissedText  = "The user dismissed the question in the chat."
	planRejectText = "The user rejected the plan in the chat. Keep planning, and ask what they want changed."
	planModeDenial = "Plan mode is on: no edits until the user approves a plan."
	planFeedback   = "The user wants changes to the plan: "
)

// askSpecial serves the requests that are not plain permission requests:
// it reports whether it took p.
func (ps *permissions) askSpecial(proc responder, p *pendingPerm) bool {
	req := p.req
	switch {
	case req.DecisionReasonType == "mode" && ps.planMode != nil && ps.planMode():
		// In plan mode the CLI leaves refusing edits to the host
		// (docs/claude-code.md §2): refused without asking anyone. Only
		// in plan mode as cc-connect knows it (the configured mode, !mode,
		// or the mode the CLI reported switching to): the reason alone
		// could name another mode's rule.
		p.choice = "plan_mode"
		ps.log.Info("Edit refused: plan mode is on", "request_id", req.RequestID, "tool", req.ToolName)
		if err := ps.respond(proc, req, agentproc.PermissionDecision{Behavior: agentproc.Deny, Message: planModeDenial}); err != nil {
			ps.log.Error("Refusing an edit in plan mode failed", "request_id", req.RequestID, "error", err)
		}
		ps.forget(p)
		return true
	case req.ToolName == "AskUserQuestion":
		qs, err := newQuestionSet(req.Input)
		if err != nil {
			ps.log.Warn("Claude's question cannot be shown as one; asking as a permission", "request_id", req.RequestID, "error", err)
			return false
		}
		p.qs = qs
		ps.setAwait() // before the prompt shows: a reply to it must find it waiting
		if posted, ok := ps.chat.askQuestions(render.QuestionPrompt(req.RequestID, "", qs.view())); ok {
			p.prompt, p.viaPrompter = posted, true
		} else {
			p.prompt = ps.chat.send(render.QuestionList(qs.view()))
		}
	case req.ToolName == "ExitPlanMode":
		p.plan = true
		ps.setAwait()
		text := render.Plan(planOf(req.Input))
		if posted, ok := ps.chat.askPermission(platform.PermissionPrompt{RequestID: req.RequestID, Tool: req.ToolName,
			Text: text, Choices: render.PlanChoices(ps.allowEdits)}); ok {
			p.prompt, p.viaPrompter = posted, true
		} else {
			p.prompt = ps.chat.send(text + render.PlanHint(ps.allowEdits))
		}
	default:
		return false
	}
	ps.arm()
	return true
}

// forget drops p without showing anything.
func (ps *permissions) forget(p *pendingPerm) {
	for i, q := range ps.pending {
		if q == p {
			ps.pending = append(ps.pending[:i], ps.pending[i+1:]...)
			break
		}
	}
	ps.unregister(p.req.RequestID)
	ps.metrics.PermissionAnswered(orDefault(p.choice, "cancelled"), 0)
	ps.answered(p, "")
	if len(ps.pending) == 0 {
		ps.setWaiting(false)
	}
	ps.setAwait()
}

// setAwait tells the accept path whether a plain reply answers something.
func (ps *permissions) setAwait() {
	waits := false
	for _, p := range ps.pending {
		waits = waits || p.qs != nil || p.plan
	}
	ps.awaitText(waits)
}

// special is the pending question or plan c answers: by its id, or with
// none (a typed command, a reply) the first that such a choice fits.
func (ps *permissions) special(c control) *pendingPerm {
	for _, p := range ps.pending {
		if c.requestID != "" {
			if p.req.RequestID == c.requestID {
				return p
			}
			continue
		}
		switch {
		case c.kind == ctrlReply && (p.qs != nil || p.plan):
			return p
		case c.choice == platform.ChoiceDismiss && p.qs != nil:
			return p
		case (c.choice == platform.ChoiceAllow || c.choice == platform.ChoiceDeny || c.choice == platform.ChoiceAlwaysAllow ||
			c.choice == platform.ChoicePlanAcceptEdits) && p.plan:
			return p
		case p.qs == nil && !p.plan:
			return nil // a permission request comes first: !allow and !deny are its
		}
	}
	return nil
}

// answerSpecial answers a question or a plan; false when c is not for one.
func (ps *permissions) answerSpecial(proc responder, c control) bool {
	p := ps.special(c)
	if p == nil || (p.qs == nil && !p.plan) {
		if c.kind == ctrlReply {
			if ps.lateReply == nil {
				ps.chat.sendTo(c.to, render.NotWaiting)
			} else {
				ps.lateReply(c)
			}
			return true
		}
		if c.choice == platform.ChoiceDismiss {
			ps.chat.sendTo(c.to, render.NoQuestion)
			return true
		}
		return false
	}
	who := orDefault(c.userName, "someone")
	p.byID, p.byName = c.userID, c.userName
	if p.qs != nil {
		ps.answerQuestion(proc, p, c, who)
	} else {
		ps.answerPlan(proc, p, c, who)
	}
	return true
}

func (ps *permissions) answerQuestion(proc responder, p *pendingPerm, c control, who string) {
	qs := p.qs
	switch {
	case c.kind == ctrlReply:
		if !qs.reply(c.text, who) {
			return
		}
	case c.choice == platform.ChoiceDismiss:
		p.choice = "dismissed"
		ps.deliver(proc, p, agentproc.PermissionDecision{Behavior: agentproc.Deny, Message: dismissedText}, render.DismissedBy(who))
		return
	case c.choice == platform.ChoiceAllow || c.choice == platform.ChoiceDeny || c.choice == platform.ChoiceAlwaysAllow:
		ps.chat.sendTo(c.to, render.QuestionNotAllowed)
		return
	default:
		if !qs.press(c.choice, c.question, c.options, who) {
			return
		}
	}
	if !qs.complete() {
		if p.viaPrompter {
			ps.chat.updateQuestions(p.prompt, render.QuestionPrompt(p.req.RequestID, "", qs.view()))
		} else {
			ps.chat.send(render.QuestionList(qs.view()))
		}
		return
	}
	input, err := qs.updatedInput()
	if err != nil {
		ps.log.Error("Encoding the answers failed", "request_id", p.req.RequestID, "error", err)
		p.choice = "error"
		ps.deliver(proc, p, agentproc.PermissionDecision{Behavior: agentproc.Deny, Message: dismissedText}, render.AnswersNotPassed)
		return
	}
	p.choice, p.answer = "answered", qs.summary()
	ps.deliver(proc, p, agentproc.PermissionDecision{Behavior: agentproc.Allow, Input: input}, render.AnsweredBy(qs.answeredBy()))
}

func (ps *permissions) answerPlan(proc responder, p *pendingPerm, c control, who string) {
	input := p.req.Input
	switch {
	case c.kind == ctrlReply:
		p.choice, p.answer = "plan_feedback", c.text
		ps.deliver(proc, p, agentproc.PermissionDecision{Behavior: agentproc.Deny, Message: planFeedback + c.text},
			render.PlanFeedback(who))
	case c.choice == platform.ChoicePlanDefault, c.choice == platform.ChoiceAllow:
		p.choice = "plan_approved"
		ps.deliver(proc, p, agentproc.PermissionDecision{Behavior: agentproc.Allow, Input: input}, render.PlanApproved(who))
	case c.choice == platform.ChoicePlanAcceptEdits:
		if !ps.allowEdits {
			ps.chat.sendTo(c.to, render.PlanNoAcceptEdits)
			return
		}
		p.choice = "plan_approved_edits"
		ps.deliver(proc, p, agentproc.PermissionDecision{Behavior: agentproc.Allow, Input: input, SetMode: "acceptEdits"},
			render.PlanApprovedEdits(who))
	case c.choice == platform.ChoicePlanKeep:
		ps.chat.sendTo(c.to, render.PlanKeepPrompt)
	case c.choice == platform.ChoiceDeny, c.choice == platform.ChoiceAlwaysAllow:
		p.choice = "plan_rejected"
		ps.deliver(proc, p, agentproc.PermissionDecision{Behavior: agentproc.Deny, Message: planRejectText}, render.PlanRejected(who))
	}
}

// deliver sends d for p and shows outcome on its prompt.
func (ps *permissions) deliver(proc responder, p *pendingPerm, d agentproc.PermissionDecision, outcome string) {
	if err := ps.respond(proc, p.req, d); err != nil {
		if errors.Is(err, agentproc.ErrNoPendingPermission) {
			p.choice = ""
			ps.resolve(p, "cancelled before the answer arrived")
			return
		}
		ps.log.Error("Answering Claude failed", "request_id", p.req.RequestID, "error", err)
		p.choice = "error"
		ps.resolve(p, fmt.Sprintf("%s But the answer could not be delivered (%s).", outcome, ps.forChat(err.Error())))
		return
	}
	ps.log.Info("Claude's request answered", "request_id", p.req.RequestID, "tool", p.req.ToolName, "decision", p.choice)
	ps.resolve(p, outcome)
}

// showOutcome shows how a question or a plan ended; false for a plain
// permission request.
func (ps *permissions) showOutcome(p *pendingPerm, outcome string) bool {
	switch {
	case p.qs != nil && p.viaPrompter:
		ps.chat.updateQuestions(p.prompt, render.QuestionPrompt(p.req.RequestID, outcome, p.qs.view()))
	case p.qs != nil:
		ps.chat.send(render.QuestionOutcome(outcome))
	case p.plan && p.viaPrompter:
		ps.chat.resolvePermission(p.prompt, outcome)
	case p.plan:
		ps.chat.send(render.PlanOutcome(outcome))
	default:
		return false
	}
	return true
}

// specialName names a pending question or plan for the restart notice.
func specialName(p *pendingPerm) string {
	switch {
	case p.qs != nil:
		return render.QuestionName(p.qs.qs[0].Question)
	case p.plan:
		return render.PlanName
	}
	return ""
}
