package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
)

// agentProcess is what the engine needs from one live Claude Code process.
// *agentproc.Process provides it through realProcess; tests may use an
// in-memory fake where the fake claude binary cannot express a case.
type agentProcess interface {
	// StartTurn sends one user message; the turn's events and result come
	// from the agentTurn.
	StartTurn(ctx context.Context, msg agentproc.UserMessage) (agentTurn, error)
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
type agentTurn interface {
	Events() <-chan agentproc.Event
	Result() (*agentproc.Result, error)
}

var _ agentTurn = (*agentproc.Turn)(nil)

// spawnFunc starts an agent process. The ctx bounds the process's life, so
// callers pass one that outlives the process.
type spawnFunc func(ctx context.Context, cfg agentproc.Config, opts agentproc.StartOptions, log *slog.Logger) (agentProcess, error)

// sessionInfo is one Claude Code session of a workspace, as !sessions lists it.
type sessionInfo struct {
	SessionID   string
	Size        int64
	ModTime     time.Time
	FirstPrompt string
	// BadID marks a transcript whose name is not a session id (a file
	// named like a flag): it is never listed as one, stored or resumed.
	BadID bool
}

// transcripts reads Claude Code's session transcripts on disk: for the
// resume log line, for !sessions, and for recovery to tell what became of
// a message sent before a crash.
type transcripts interface {
	// Find returns the transcript path and size of a session id.
	Find(sessionID string) (path string, size int64, err error)
	// List returns the sessions whose project folder is cwd.
	List(cwd string) ([]sessionInfo, error)
	// Contains reports whether the transcript at path holds the user
	// message that carried uuid u.
	Contains(path, u string) (bool, error)
	// End says how the transcript's last turn ended.
	End(path string) (agentproc.Interruption, error)
	// ReplyAfter is the reply the transcript holds to the message u.
	ReplyAfter(path, u string) (string, error)
}

// waitTurn reads t's events to the end, passing each to on, and returns
// its result: for callers with nothing else to wait on.
func waitTurn(t agentTurn, on func(agentproc.Event)) (*agentproc.Result, error) {
	for ev := range t.Events() {
		on(ev)
	}
	return t.Result()
}
