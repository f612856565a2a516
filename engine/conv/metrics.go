package conv

import (
	"errors"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
)

// Metrics is what the engine reports for monitoring; *metrics.Metrics
// implements it. Options.Metrics nil turns reporting off. Outcomes, causes
// and choices are short fixed words, so that label sets stay small.
type Metrics interface {
	TurnStarted()
	TurnFinished(outcome string, d time.Duration)
	Fallback(cause string)
	PermissionRequested()
	PermissionAnswered(choice string, wait time.Duration)
	QueueDepth(n int)
	ContextPercent(pct int)
	PlatformEvent(platform, kind string)
	// MessageAccepted times a chat message accepted (queued), from the
	// engine's receiving it to its journal record on disk: what the
	// platform's ack waits for.
	MessageAccepted(platform string, d time.Duration)
	PlatformError(platform string)
	// SpareTaken counts a new Claude session's start while spares are on
	// (agent.prewarm > 0), by what it found: "ready", "loading" (a spare
	// still in its handshake) or "none" (it started its own process).
	SpareTaken(outcome string)
	// The figures a scrape reads from the engine itself.
	SetSessionsFunc(f func() map[string]int)
	SetProcessesFunc(f func() int)
	SetSparesFunc(f func() map[string]int)
}

// noMetrics is the Metrics of an engine without any.
type noMetrics struct{}

func (noMetrics) TurnStarted()                             {}
func (noMetrics) TurnFinished(string, time.Duration)       {}
func (noMetrics) Fallback(string)                          {}
func (noMetrics) PermissionRequested()                     {}
func (noMetrics) PermissionAnswered(string, time.Duration) {}
func (noMetrics) QueueDepth(int)                           {}
func (noMetrics) ContextPercent(int)                       {}
func (noMetrics) PlatformEvent(string, string)             {}
func (noMetrics) MessageAccepted(string, time.Duration)    {}
func (noMetrics) PlatformError(string)                     {}
func (noMetrics) SpareTaken(string)                        {}
func (noMetrics) SetSessionsFunc(func() map[string]int)    {}
func (noMetrics) SetProcessesFunc(func() int)              {}
func (noMetrics) SetSparesFunc(func() map[string]int)      {}

var _ Metrics = noMetrics{}

// MetricsOf returns m, or a Metrics that drops everything.
func MetricsOf(m Metrics) Metrics {
	if m == nil {
		return noMetrics{}
	}
	return m
}

// ByState counts the conversations in memory by state (idle,
// running, requires_action). Retired ones live on disk and are not counted.
func (e *Set) ByState() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for _, s := range e.sessions {
		st, _, _ := s.mb.snapshot()
		out[string(st)]++
	}
	return out
}

// noteQueue reports the messages waiting over all conversations. Callers
// hold neither e.mu nor a session's mu; Metrics.QueueDepth is called with
// e.mu held, so it must not call back into the engine.
func (e *Set) noteQueue() {
	if _, off := e.metrics.(noMetrics); off {
		return // the sum walks every conversation: not for nothing
	}
	n := 0
	e.mu.Lock()
	for _, s := range e.sessions {
		n += s.mb.waitingTurns()
	}
	// Reported before e.mu is released: two callers that counted in
	// one order must not report in the other, or a stale depth (a
	// message already taken from the FIFO) outlives the true one.
	e.metrics.QueueDepth(n)
	e.mu.Unlock()
}

// turnOutcome names how a turn ended: ok, error, interrupted (!stop or
// shutdown mid-turn), stopped (before it started), shutdown (never ran).
func turnOutcome(out outcome, ok bool) string {
	switch {
	case out.err == nil && out.res != nil && strings.HasPrefix(out.res.TerminalReason, "aborted"):
		return "interrupted"
	case ok:
		return "ok"
	case errors.Is(out.err, ErrStopped):
		return "shutdown"
	case errors.Is(out.err, errStoppedWaiting):
		return "stopped"
	}
	return "error"
}

// fallbackCause names why a session restarted fresh.
func fallbackCause(err error) string {
	if errors.Is(err, agentproc.ErrPromptTooLong) {
		return "prompt_too_long"
	}
	return "session_not_found"
}

// permissionChoice names a permission answer for the metrics.
func permissionChoice(b agentproc.Behavior) string {
	switch b {
	case agentproc.Allow:
		return "allow"
	case agentproc.AlwaysAllow:
		return "always"
	}
	return "deny"
}
