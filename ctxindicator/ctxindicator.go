// Package ctxindicator tells users how full Claude's context window is, and
// compares two ways of knowing it: the token figures Claude Code reports
// (track A) and Claude's own estimate, which it appends to each reply as a
// "[ctx: ~XX%]" marker when asked to (track B).
//
// The package is pure: no I/O, no goroutines, no logging. It computes the
// figures and the strings; the engine logs, posts and stores them. It must
// not parse the agent's stream itself (agentproc does), nor import
// agentproc: the engine turns a turn's result into Figures. It touches
// reply text only to remove the one self-report marker it parsed.
package ctxindicator

// DefaultWindow is the context window assumed when Claude Code did not
// report one (modelUsage missing, e.g. a turn that made no API call) and
// the config gives no fallback.
const DefaultWindow int64 = 200_000

// Percent turns a context size into a whole percentage of window, rounded
// half up and clamped to 0..100. Over reports that the raw value passed
// 100%, which means the window figure is wrong (or the model changed): the
// caller logs a warning rather than show a number over 100. A window of zero
// or less gives 0 and false.
func Percent(tokens, window int64) (pct int, over bool) {
	if window <= 0 || tokens <= 0 {
		return 0, false
	}
	if tokens > window {
		return 100, true
	}
	// Integer arithmetic keeps 0.5 boundaries exact; tokens <= window here,
	// so tokens*100 cannot overflow for any real window size.
	return int((tokens*100 + window/2) / window), false
}
