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
	// Turn sends one user message and blocks until the turn's result. on is
	// called for every event of the turn, before Turn returns.
	Turn(ctx context.Context, text string, on func(agentproc.Event)) (*agentproc.Result, error)
	Interrupt(ctx context.Context) error
	RespondPermission(ctx context.Context, requestID string, d agentproc.PermissionDecision) error
	Close(ctx context.Context) error
	Done() <-chan struct{}
	SessionID() string
	StderrTail() string
	Pid() int
}

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

// transcripts finds Claude Code's session transcripts on disk (for the
// resume log line and for !sessions).
type transcripts interface {
	// Find returns the transcript path and size of a session id.
	Find(sessionID string) (path string, size int64, err error)
	// List returns the sessions whose project folder is cwd.
	List(cwd string) ([]sessionInfo, error)
}
