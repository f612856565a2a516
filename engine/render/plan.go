package render

import (
	"strings"

	"github.com/cc-connect/cc-connect/platform"
)

// Claude's plans (ExitPlanMode) as the chat shows them: the plan in full,
// approved with a button or !allow, or kept in planning with a reply.

// PlanName names a pending plan, for the restart notice.
const PlanName = "Claude's plan"

// Plan is the plan as the chat shows it, in full; plan is the CLI's text
// (or its plan file's), "" when it gave none.
func Plan(plan string) string {
	if strings.TrimSpace(plan) == "" {
		return "📋 **Claude has a plan** but did not say what it is. Approve to let it start, or keep planning and say what you want to see."
	}
	return "📋 **Claude's plan** — approve it to start, or keep planning with your feedback (reply in the thread):\n\n" + Visible(strings.TrimSpace(plan))
}

// PlanChoices are a plan's buttons: approve and go on asking before edits,
// approve and accept edits (when the binding allows that mode), or keep
// planning.
func PlanChoices(acceptEdits bool) []platform.PromptChoice {
	cs := []platform.PromptChoice{{Choice: platform.ChoicePlanDefault, Label: "Approve", Style: "primary"}}
	if acceptEdits {
		cs = append(cs, platform.PromptChoice{Choice: platform.ChoicePlanAcceptEdits, Label: "Approve, accept edits"})
	}
	return append(cs, platform.PromptChoice{Choice: platform.ChoicePlanKeep, Label: "Keep planning"})
}

// PlanHint follows a plan posted as text, where the platform has no
// buttons.
func PlanHint(acceptEdits bool) string {
	hint := "\n\nReply `!allow` to approve (Claude goes on asking before edits)"
	if acceptEdits {
		hint += ", `!allow edits` to approve and let it edit files without asking"
	}
	return hint + ", or reply with what to change to keep planning."
}

// PlanOutcome is how a plan posted as text ended.
func PlanOutcome(outcome string) string { return "Claude's plan: " + lowerFirst(outcome) }

// What the chat is told as a plan is answered.
const (
	PlanKeepPrompt    = "Reply in the thread with what Claude should change in the plan; it keeps planning with your words."
	PlanNoAcceptEdits = "acceptEdits is not among this conversation's allowed modes; approve the plan with `!allow`."
)

// PlanFeedback is the outcome of a plan answered with a reply: Claude
// keeps planning with it.
func PlanFeedback(who string) string { return "Keep planning, with " + who + "'s feedback." }

// PlanApproved is the outcome of a plan approved into the default mode.
func PlanApproved(who string) string {
	return "Approved by " + who + ": Claude goes on, asking before edits."
}

// PlanApprovedEdits is the outcome of a plan approved into acceptEdits.
func PlanApprovedEdits(who string) string {
	return "Approved by " + who + ": Claude goes on and edits files without asking."
}

// PlanRejected is the outcome of a plan denied.
func PlanRejected(who string) string { return "Rejected by " + who + ": Claude keeps planning." }
