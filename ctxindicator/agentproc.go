package ctxindicator

import "github.com/cc-connect/cc-connect/agentproc"

// FromResult builds track A from a turn's result: its ContextTokens (the
// last API call, not the summed result.usage) over the window Claude Code
// reported in modelUsage, else fallbackWindow (0 means DefaultWindow). A nil
// result gives figures with no token data.
func FromResult(r *agentproc.Result, fallbackWindow int64) Figures {
	if r == nil {
		return NewFigures(0, 0, fallbackWindow)
	}
	return NewFigures(r.ContextTokens, r.ContextWindow(), fallbackWindow)
}
