package procs

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
)

// Process is what the engine needs from one live Claude Code process.
// *agentproc.Process provides it through realProcess; tests may use an
// in-memory fake where the fake claude binary cannot express a case.
type Process interface {
	// StartTurn sends one user message; the turn's events and result come
	// from the agentTurn.
	StartTurn(ctx context.Context, msg agentproc.UserMessage) (Turn, error)
	Interrupt(ctx context.Context) error
	RespondPermission(ctx context.Context, requestID string, d agentproc.PermissionDecision) error
	Close(ctx context.Context) error
	Done() <-chan struct{}
	SessionID() string
	StderrTail() string
	Pid() int
}

// agentTurn is one running turn (*agentproc.Turn): its events in order,
// closed at its end, then its result.
type Turn interface {
	Events() <-chan agentproc.Event
	Result() (*agentproc.Result, error)
}

var _ Turn = (*agentproc.Turn)(nil)

// spawnFunc starts an agent process. The ctx bounds the process's life, so
// callers pass one that outlives the process.
type SpawnFunc func(ctx context.Context, cfg agentproc.Config, opts agentproc.StartOptions, log *slog.Logger) (Process, error)

// sessionInfo is one Claude Code session of a workspace, as !sessions lists it.
type SessionInfo struct {
	SessionID   string
	Size        int64
	ModTime     time.Time
	FirstPrompt string
	// BadID marks a transcript whose name is not a session id (a file
	// named like a flag): it is never listed as one, stored or resumed.
	BadID bool
}

// Transcripts reads Claude Code's session transcripts on disk: for the
// resume log line, for !sessions, and for recovery to tell what became of
// a message sent before a crash.
type Transcripts interface {
	// Find returns the transcript path and size of a session id.
	Find(sessionID string) (path string, size int64, err error)
	// List returns the sessions whose project folder is cwd.
	List(cwd string) ([]SessionInfo, error)
	// Contains reports whether the transcript at path holds the user
	// message that carried uuid u.
	Contains(path, u string) (bool, error)
	// Absorbed reports whether the transcript at path shows the message
	// sent with uuid u taken into a running turn (a follow-up steered
	// into it), where it has no user line of its own.
	Absorbed(path, u string) (bool, error)
	// End says how the transcript's last turn ended.
	End(path string) (agentproc.Interruption, error)
	// ReplyAfter is the reply the transcript holds to the message u.
	ReplyAfter(path, u string) (string, error)
	// Place writes the transcript of session sessionID, started in cwd,
	// where the CLI looks for it (a conversation taken over from another
	// host, with the transcript that host replicated). An existing one
	// is refused unless replace (another host answered in the session
	// since this host's last turn).
	Place(cwd, sessionID string, data []byte, replace bool) error
}

// waitTurn reads t's events to the end, passing each to on, and returns
// its result: for callers with nothing else to wait on.
func WaitTurn(t Turn, on func(agentproc.Event)) (*agentproc.Result, error) {
	for ev := range t.Events() {
		on(ev)
	}
	return t.Result()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// lastLine is the last non-empty line of s, at most 300 characters, for
// logs.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			if r := []rune(l); len(r) > 300 {
				return string(r[:300]) + "…"
			}
			return l
		}
	}
	return ""
}
