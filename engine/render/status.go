package render

import (
	"fmt"
	"strings"
	"time"
)

// The replies of the commands that show something: !status, !sessions
// and !help.

// Status is what !status shows of a conversation.
type Status struct {
	Now time.Time
	// State is the conversation's: idle, running or requires_action
	// (waiting for a permission answer).
	State string
	// LoginFailed says the last turn failed for want of a login.
	LoginFailed bool
	Workspace   string
	SessionID   string // "" before the first turn
	// Context is the context figure's line; "" when there are no
	// figures yet.
	Context string
	Queue   int
	// Pid is the live claude process's; 0 when none runs. IdleSince is
	// when it went idle (zero while a turn runs).
	Pid       int
	IdleSince time.Time
	// LastTurn is when the last turn ended; zero before the first.
	LastTurn    time.Time
	Model, Mode string
	CostUSD     float64
	People      []string // who spoke in the session
	// Changes is what the session's last turn changed (no Files: it
	// changed none, or none is known). Revert is why !revert would refuse
	// to undo it now (one of its refusals), "" when it would go ahead.
	Changes  TurnChanges
	Revert   string
	Platform string // the platform's connection state, "" when it says none
	// Extra are lines of the conversation's features (its worktree, its
	// spend), each shown when set.
	Extra []string
	// Cluster is the cluster's part, "" outside one; it brings its own
	// blank line.
	Cluster string
}

// StatusText is !status.
func StatusText(s Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "State: %s", s.State)
	if s.State == "requires_action" {
		b.WriteString(" (waiting for a permission answer)")
	}
	if s.LoginFailed {
		b.WriteString("; " + LoginFailedState)
	}
	fmt.Fprintf(&b, "\nWorkspace: %s", s.Workspace)
	fmt.Fprintf(&b, "\nSession: %s", orDefault(s.SessionID, "none yet"))
	fmt.Fprintf(&b, "\n%s", orDefault(s.Context, "Context: no figures yet"))
	fmt.Fprintf(&b, "\nQueue: %d waiting", s.Queue)
	if s.Pid != 0 {
		fmt.Fprintf(&b, "\nProcess: alive, pid %d", s.Pid)
		if s.State == "idle" && !s.IdleSince.IsZero() {
			fmt.Fprintf(&b, "\nIdle: %s", Age(s.Now.Sub(s.IdleSince)))
		}
	} else {
		b.WriteString("\nProcess: not running")
	}
	if !s.LastTurn.IsZero() {
		fmt.Fprintf(&b, "\nLast turn: %s ago", Age(s.Now.Sub(s.LastTurn)))
	}
	if len(s.Changes.Files) > 0 {
		b.WriteString("\nLast turn changed: " + changed(s.Changes))
		if s.Revert == "" {
			b.WriteString("\nRevert: possible (approvers: `!revert`)")
		} else {
			b.WriteString("\nRevert: not possible. " + s.Revert)
		}
	}
	fmt.Fprintf(&b, "\nModel: %s", s.Model)
	fmt.Fprintf(&b, "\nPermission mode: %s", s.Mode)
	fmt.Fprintf(&b, "\nCost: $%.4f", s.CostUSD)
	if len(s.People) > 0 {
		fmt.Fprintf(&b, "\nPeople in this session: %s", strings.Join(s.People, ", "))
	}
	if s.Platform != "" {
		fmt.Fprintf(&b, "\nPlatform: %s", s.Platform)
	}
	for _, line := range s.Extra {
		if line != "" {
			b.WriteString("\n" + line)
		}
	}
	b.WriteString(s.Cluster)
	return b.String()
}

// Session is one of Claude Code's sessions as !sessions lists it.
type Session struct {
	ID          string
	Current     bool // the conversation's own
	Size        int64
	ModTime     time.Time
	FirstPrompt string
}

// Sessions is what !sessions shows: a workspace's sessions, newest first.
type Sessions struct {
	Now       time.Time
	Workspace string
	List      []Session
	// Skipped counts the transcripts left out because their name is not
	// a session id.
	Skipped int
}

// maxSessionsShown bounds the !sessions listing.
const maxSessionsShown = 20

// SessionsText is !sessions; the numbers it gives are !resume's.
func SessionsText(s Sessions) string {
	skipped := ""
	if s.Skipped > 0 {
		skipped = fmt.Sprintf("\n(%d transcript file(s) whose name is not a Claude Code session id were left out; they cannot be resumed.)", s.Skipped)
	}
	if len(s.List) == 0 {
		return "No Claude Code sessions in " + s.Workspace + " yet." + skipped
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Sessions in %s (newest first):", s.Workspace)
	for i, si := range s.List {
		if i == maxSessionsShown {
			fmt.Fprintf(&b, "\n… and %d more", len(s.List)-maxSessionsShown)
			break
		}
		mark := ""
		if si.Current {
			mark = " (current)"
		}
		fmt.Fprintf(&b, "\n%d. %s%s — %s, %s ago — %s", i+1, si.ID, mark, Size(si.Size),
			Age(s.Now.Sub(si.ModTime)), orDefault(Quote(si.FirstPrompt, 60), "(no prompt)"))
	}
	b.WriteString("\nSend !resume <n> to switch.")
	b.WriteString(skipped)
	return b.String()
}

// Command is a chat command as !help lists it.
type Command struct {
	Name  string // without its prefix
	Usage string // what follows the name: "<question>", "[name]"
	// Help says what it does; "" lists the command on the line of the one
	// before it ("!allow [always] / !deny — …").
	Help string
}

// Line is a command as a list names it: "!btw <question>".
func (c Command) Line() string {
	if c.Usage == "" {
		return "!" + c.Name
	}
	return "!" + c.Name + " " + c.Usage
}

// Help is !help: one line per command, in the order given.
func Help(cmds []Command) string {
	var lines []string
	for _, c := range cmds {
		if c.Help == "" && len(lines) > 0 {
			head, tail, _ := strings.Cut(lines[len(lines)-1], " — ")
			lines[len(lines)-1] = head + " / " + c.Line() + " — " + tail
			continue
		}
		lines = append(lines, c.Line()+" — "+c.Help)
	}
	return "Commands (prefix ! or /):\n" + strings.Join(lines, "\n")
}
