package agentproc

import (
	"errors"
	"fmt"
)

// ErrSessionNotFound means --resume named a session the CLI does not know
// ("No conversation found with session ID"). Callers forget the stored id
// and start a fresh session.
var ErrSessionNotFound = errors.New("agent session not found")

// ErrPromptTooLong means the turn ended with "Prompt is too long". The
// session is poisoned: the failed prompt stays in its history and every
// later turn fails too, so callers start a fresh session and resend.
var ErrPromptTooLong = errors.New("prompt is too long")

// ErrMalformedOutput means the agent wrote output that breaks the protocol
// in a way the turn cannot survive (a line past the size limit, a result
// that does not decode). Callers treat the process as broken and close it.
var ErrMalformedOutput = errors.New("malformed agent output")

// ErrInvalidSessionID means a session id to resume or to use was not a
// canonical UUID. Claude Code takes `--resume` with an optional value, so
// an id like "--dangerously-skip-permissions" would be read as a flag:
// agentproc refuses anything but a UUID before it starts a process.
var ErrInvalidSessionID = errors.New("invalid claude session id")

// ErrClosed is returned by methods called after the process ended.
var ErrClosed = errors.New("agent process closed")

// ExitError reports that the agent process ended before the turn's result.
type ExitError struct {
	Code       int    // exit code, -1 when killed by a signal
	Signal     string // signal name when killed by one
	StderrTail string // the last part of stderr, for diagnostics
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("agent process exited with code %d", e.Code)
	if e.Signal != "" {
		msg = "agent process killed by " + e.Signal
	}
	if e.StderrTail != "" {
		msg += ": " + e.StderrTail
	}
	return msg
}
