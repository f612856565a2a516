package render

import (
	"fmt"
	"strings"
)

// Notices: what a conversation tells its thread about its own state (a
// message queued, refused, waiting for a slot), and the report of a
// !compact.

// ParkedAtShutdown is the turn's notice when cc-connect stops while it
// waits only on an answer: the prompt stays, and the turn goes on after
// the restart with whatever was answered (engine/conv/parked.go).
const ParkedAtShutdown = "cc-connect is restarting. The request above stays open: answer it at any time, and the turn goes on with the answer once cc-connect is back."

// ShutdownText answers a message that came while cc-connect shuts down.
const ShutdownText = "cc-connect is shutting down; this message was not processed. Please send it again later."

// ShutdownDropped answers a message still queued at shutdown that is not
// journaled, so that the next start does not run it; text is the message.
func ShutdownDropped(text string) string {
	return "cc-connect is shutting down; this message was not processed. Please send it again later: " + Quote(text, 80)
}

// RestartQueuedText, followed by the message, says that it stays in the
// journal at shutdown and runs after the restart.
const RestartQueuedText = "cc-connect is restarting; this message stays queued and runs when it is back: "

// Busy answers what a conversation whose control lane is full could not
// take.
const Busy = "The session is busy right now; please try again in a moment."

// Notices posted when a session cannot continue and a fresh one starts,
// and while a turn waits for a process slot.
const (
	NoticeTooLong  = "Session context was too large to resume — starting fresh. Project context is preserved in CLAUDE.md."
	NoticeNotFound = "Previous session could not be found — starting fresh."
	NoticeWaiting  = "All agent slots are busy — waiting for a free slot."
)

// Queued tells the sender of a turn that has to wait its place.
func Queued(pos int) string {
	return fmt.Sprintf("Queued (position %d): it runs after the current turn.", pos)
}

// Steered tells the sender of a message written into the running turn
// (quoted) that Claude took it in, where the platform has no reactions.
func Steered(quoted string) string {
	return fmt.Sprintf("Added to the running turn: “%s”", quoted)
}

// FollowUsage tells the sender of a !steer or !queue (name) without a
// message how it is used.
func FollowUsage(name string) string {
	return fmt.Sprintf("Usage: !%s <message>", name)
}

// RunsNow is Late's second sentence for a message that runs at once.
const RunsNow = "It runs now."

// StillWaits is what a host that took a conversation over tells its
// thread of the request (what) its previous host's turn waited on, which
// it adopted (conv/approvals.go): the prompt above still answers it.
func StillWaits(what string) string {
	return "The request above (" + what + ") still waits for an answer: the turn goes on here once it has one."
}

// RunRequestStays tells the thread, under the first request a scheduled
// or webhook run's turn makes on a cluster binding, that it does not
// travel with the binding as a person's does: the run was settled in the
// cluster's stream when host journaled it, so no other host is given it
// again to adopt what it waits on.
func RunRequestStays(host string) string {
	return "This request comes from a scheduled or webhook run, which stays on host " + host +
		": answer it while that host serves this channel. If it stops first, the request does not move to the host " +
		"that takes the channel over (an answer there finds nothing pending), and the run does not go on there: " +
		"start it again if it is still needed."
}

// Late tells the sender of a message (text) that came after a later
// message of the conversation had started; then is Queued's text, or
// RunsNow.
func Late(text, then string) string {
	return fmt.Sprintf("“%s” reached cc-connect after a later message of this conversation had started, "+
		"so it is answered after that one. %s", Quote(text, 80), then)
}

// NotApprover refuses a permission answer (a button, !allow, !deny,
// !skip) from a user who may not approve; user is their name, else id.
func NotApprover(user string) string {
	return user + " is not allowed to answer permission requests here."
}

// Replies to the controls that find nothing to act on.
const (
	NoPermissionPending = "No permission request is pending."
	NothingRunning      = "Nothing is running."
	PermissionGone      = "That permission request is no longer pending."
)

// Compaction is what a !compact turn reported, for its report.
type Compaction struct {
	// Done says the CLI compacted; PreTokens and PostTokens are the
	// context before and after, BeforePct and AfterPct the same as a
	// share of the window.
	Done                  bool
	PreTokens, PostTokens int64
	BeforePct, AfterPct   int
	// Err is the compaction's error as the chat may read it; "" when it
	// did not fail.
	Err string
	// Said is the turn's result text and Errors its errors, when the CLI
	// neither compacted nor failed.
	Said   string
	Errors []string
}

// CompactionReport says how a !compact turn went.
func CompactionReport(c Compaction) string {
	switch {
	case c.Done:
		return fmt.Sprintf("Compacted the conversation: %s → %s tokens of context (%d%% → %d%%).",
			Thousands(c.PreTokens), Thousands(c.PostTokens), c.BeforePct, c.AfterPct)
	case c.Err != "":
		return "Compaction failed (" + c.Err + "); the conversation is unchanged."
	case strings.TrimSpace(c.Said) != "":
		return "Claude Code did not compact the conversation: " + Quote(c.Said, 300)
	case len(c.Errors) > 0:
		return "Compaction failed: " + Quote(strings.Join(c.Errors, "; "), 300)
	}
	return "Claude Code did not report a compaction; the conversation is unchanged."
}

// LoginNeeded replaces what Claude Code answers when it has no valid
// credentials (said: its own text, "Not logged in · Please run /login" or
// "Invalid API key · …"): its /login cannot be typed in a chat, so this
// names the fix on the machine cc-connect runs on.
func LoginNeeded(said string) string {
	said = Quote(Visible(said), 200)
	return "🔑 Claude Code could not answer: it has no valid login (it said: \"" + said + "\"; /login cannot be typed here).\n" +
		"To fix it, on the machine cc-connect runs on, as the user the agent runs as (agent.user, else the user cc-connect runs as):\n" +
		"• run `claude` and type /login (for a service: `sudo -u cc-connect -H claude auth login`), or\n" +
		"• set ANTHROPIC_API_KEY in agent.env, or in the environment of cc-connect's service unit.\n" +
		"`cc-connect doctor` checks it; docs/operations.md (\"Logging in\") says more. Then send your message again."
}

// LoginFailedState is what !status adds to the state of a conversation
// whose last turn failed for want of a login: idle is not all well.
const LoginFailedState = "the last turn failed: Claude Code is not logged in (log in as the agent's user or set ANTHROPIC_API_KEY; `cc-connect doctor` checks it)"
