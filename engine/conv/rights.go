package conv

import (
	"log/slog"

	"github.com/cc-connect/cc-connect/binding"
)

// right is who may do something in a conversation: run a command (each
// registry entry names its own, commands.go), answer a prompt. Rights are
// read from the binding in force when they are checked (liveBinding), not
// from the one the conversation started under: a right a reload takes
// away applies to the very next command.
type right int

const (
	anyone      right = iota // every user the binding allows (the engine refused the others)
	approvers                // binding.Approver: answer permission requests, questions and plans
	admins                   // binding.Admin
	shellAdmins              // admins, where the binding sets allow_shell
)

// refusedLog is the log line of a refusal, by right.
var refusedLog = [...]string{
	approvers:   "Refused a permission answer from a user who may not approve",
	admins:      "Refused a command only admins may run",
	shellAdmins: "Refused a shell command",
}

// gate is the one place a conversation checks who may do what: every
// command as it is accepted (its registry entry's right), a button press
// on a prompt (Set.Answer), a reply taken for an answer, and the part of
// !resume only admins may use.
type gate struct {
	binding func() binding.Binding // the binding in force now (liveBinding)
	log     *slog.Logger
}

// why says why user may not do what r allows: "" when they may.
func (g gate) why(user string, r right) string {
	b := g.binding()
	switch {
	case r == approvers && !b.Approver(user):
		return "not an approver"
	case r == admins && !b.Admin(user):
		return "not an admin"
	case r == shellAdmins && !b.AllowShell:
		return "shell is off for this binding"
	case r == shellAdmins && !b.Admin(user):
		return "user is not an admin"
	}
	return ""
}

// allows says whether user may do what r allows, without a word in the
// log (a reply from someone who may not answer is a message, not a
// refusal).
func (g gate) allows(user string, r right) bool { return g.why(user, r) == "" }

// refuse checks user against r and logs a refusal, with attrs; it says
// why they may not ("" when they may).
func (g gate) refuse(user, userName string, r right, attrs ...any) string {
	why := g.why(user, r)
	if why == "" {
		return ""
	}
	args := append([]any{"reason", why, "user_id", user, "user_name", userName}, attrs...)
	if r == shellAdmins {
		// A shell command never passes through Claude's permission
		// prompts: an attempt is worth a warning.
		g.log.Warn(refusedLog[r], args...)
	} else {
		g.log.Info(refusedLog[r], args...)
	}
	return why
}

// mayApprove says whether a user may answer the conversation's permission
// requests (a button press: requestID names it), logging a refusal.
func (g gate) mayApprove(userID, userName, requestID string) bool {
	return g.refuse(userID, userName, approvers, "request_id", requestID) == ""
}

// Rights is what a person may do in a binding's conversations, as the
// gate decides it; the console asks for them at every request, so a
// reload that takes a right away applies to its next page or button.
type Rights struct {
	Use     bool // on the allow list: may see the conversations and stop a turn
	Approve bool // may answer permission requests, questions and plans
	Admin   bool // may pause and resume schedules
}

// RightsOf is the gate's answer for user in b (the binding in force).
func RightsOf(b binding.Binding, user string) Rights {
	if !b.Allowed(user) {
		return Rights{} // the engine refuses everything else from them
	}
	g := gate{binding: func() binding.Binding { return b }, log: slog.New(slog.DiscardHandler)}
	return Rights{Use: true, Approve: g.allows(user, approvers), Admin: g.allows(user, admins)}
}
