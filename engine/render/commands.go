package render

import (
	"fmt"
	"strings"
)

// What the chat commands answer, command by command (their lists, !status
// and !sessions, are in status.go).

// UnknownCommand answers "!name" when no command has that name.
func UnknownCommand(name string) string {
	return fmt.Sprintf("Unknown command !%s. Send !help for the list.", name)
}

// !new and !resume, which act at the head of the queue.
const (
	NewAfterTurn    = "A new session starts after the current turn and the messages queued before this command."
	ResumeAfterTurn = "Switching after the current turn and the messages queued before this command."
	ResumeUsage     = "Usage: !resume <n|id>, with n from !sessions."
	// ResumeNotAnID refuses an id a journal edited by hand brought.
	ResumeNotAnID = "That is not a Claude Code session id, so the conversation keeps its session."
	// ResumeBadID refuses an admin's id from outside the list that is not
	// a session UUID.
	ResumeBadID = "That is not a Claude Code session id: give a number from !sessions or a session UUID."
	// ResumeNotAdmin refuses an id from outside this workspace's list to
	// a user who is not an admin.
	ResumeNotAdmin = "Only an admin can resume a session that is not in this workspace's !sessions list."
)

// NewSession answers !new; old is the session left ("" when none), branch
// the worktree kept ("" when the conversation had none).
func NewSession(old, branch string) string {
	msg := "Started a new session: your next message begins with a fresh context."
	if old != "" {
		msg += fmt.Sprintf(" (The previous session %s stays on disk; !sessions lists it.)", old)
	}
	if branch != "" {
		msg += fmt.Sprintf(" Its worktree (branch %s) is kept: `cc-connect worktrees` lists it; the next message works in a new one.", branch)
	}
	return msg
}

// Resumed answers !resume once the conversation switched to id.
func Resumed(id string) string {
	return fmt.Sprintf("Switched to session %s: your next message resumes it.", id)
}

// NoSuchSession answers !resume n past the list.
func NoSuchSession(n int) string {
	return fmt.Sprintf("There is no session %d; send !sessions for the list.", n)
}

// SessionsFailed answers !sessions when the transcripts cannot be read;
// why is the error as the chat may read it.
func SessionsFailed(why string) string { return "Could not list sessions: " + why }

// NothingToCompact refuses !compact before the first turn.
const NothingToCompact = "There is no conversation to compact yet."

// ModelShown answers !model: the model and how to change it.
func ModelShown(model string) string {
	return "Model: " + model + "\nSend !model <name> to change it for this conversation (an alias such as sonnet or opus, or a full model id), or !model default to go back to the configured one."
}

// NotAModel refuses a !model argument that cannot be a model's name.
func NotAModel(arg string) string { return fmt.Sprintf("%q is not a model name.", Quote(arg, 60)) }

// ModelRefused says the CLI refused the change; why is its message.
func ModelRefused(why string) string { return "Claude Code refused the model change: " + why }

// ModelDefault says the conversation goes back to the configured model.
func ModelDefault(model string) string {
	return "This conversation goes back to the configured model (" + orDefault(model, "Claude Code's default") + ") from the next turn."
}

// ModelSet says the conversation uses model from its next turn.
func ModelSet(model string) string {
	return "Model set to " + model + " for this conversation, from the next turn on."
}

// ModeShown answers !mode: the mode and those allowed.
func ModeShown(mode string, allowed []string) string {
	return fmt.Sprintf("Permission mode: %s\nAllowed here: %s. Send !mode <mode> to change it for this conversation.",
		mode, strings.Join(allowed, ", "))
}

// ModeNotAllowed refuses a mode outside the binding's allowed ones.
func ModeNotAllowed(arg string, allowed []string) string {
	return fmt.Sprintf("%q is not allowed here. Allowed modes: %s.", Quote(arg, 60), strings.Join(allowed, ", "))
}

// ModeRefused says the CLI refused the change; why is its message.
func ModeRefused(why string) string { return "Claude Code refused the mode change: " + why }

// ModeSet says the conversation is in mode now.
func ModeSet(mode string) string { return "Permission mode set to " + mode + " for this conversation." }

// !btw, answered from a fork of the session. Every answer starts with
// SidePrefix, since it comes between the turns of the conversation.
const (
	SidePrefix   = "(side answer) "
	BtwUsage     = "Usage: !btw <question>"
	BtwNoSession = "There is no session to ask about yet: send a normal message first."
	// SideNoText stands for an answer without text.
	SideNoText = "(no reply text)"
)

// Side is a side question's answer (or why there is none) as posted.
func Side(text string) string { return SidePrefix + text }

// SideShutdown says a side question was not answered: cc-connect stops.
const SideShutdown = SidePrefix + "not answered: cc-connect is shutting down."

// SideWritable says the fork was stopped: tool could change the workspace.
func SideWritable(tool string) string {
	return Side("not answered: the agent started with a tool that can change the workspace (" + tool + "), so it was stopped.")
}

// SideNoStart says the fork's process could not start; why as the chat
// may read it.
func SideNoStart(why string) string { return Side("could not start: " + why) }

// SideFailed says the side question failed; why as the chat may read it.
func SideFailed(why string) string { return Side("failed: " + why) }

// ProcessEnded says how a claude process ended (exit: "exited (code 1)")
// and the last line it wrote to stderr.
func ProcessEnded(exit, stderr string) string {
	return fmt.Sprintf("the agent process %s: %s", exit, stderr)
}

// !sh, for a binding's admins where it allows it.
const (
	ShellOffText      = "!sh is off in this channel. An admin of this cc-connect can turn it on with allow_shell = true in the channel's binding."
	ShellNotAdminText = "Only an admin of this channel can run !sh."
	ShellBusyText     = "A shell command is already running in this conversation; wait for it or send !stop."
	ShellUsage        = "Usage: !sh <command> — runs in this conversation's workspace; the output is posted here and told to Claude at the start of the next turn."
	ShellStopping     = "Stopping the shell command."
)

// NoSchedules answers !schedules where no scheduler runs.
const NoSchedules = "No schedules are configured."

// SchedulesNotAdmin refuses "!schedules pause|resume NAME" (verb) to a
// user who is not an admin of the binding.
func SchedulesNotAdmin(verb string) string {
	return fmt.Sprintf("Only this binding's admins can %s a schedule.", verb)
}

// Worktree is !status's line about a conversation's worktree: its branch,
// the branch it was made from and its state; unreadable, when set, says
// why the state could not be read (as the chat may read it), and base is
// "" when the worktree itself could not be found.
func Worktree(branch, base, state, unreadable string) string {
	switch {
	case unreadable != "" && base == "":
		return fmt.Sprintf("Worktree: branch %s (its state could not be read: %s)", branch, unreadable)
	case unreadable != "":
		return fmt.Sprintf("Worktree: branch %s of %s (its state could not be read: %s)", branch, base, unreadable)
	}
	return fmt.Sprintf("Worktree: branch %s of %s, %s", branch, base, state)
}
