package render

import "time"

// Usage limits (docs/turns.md "Usage limits"): what a thread is told when
// Claude's usage window is exhausted and its messages wait for the reset.

// LimitParked tells a thread that its message waits for the usage window
// to reset and runs by itself then; known says the time is the reset the
// CLI reported, else it is a back-off.
func LimitParked(until time.Time, known bool) string {
	at := until.UTC().Format("15:04")
	if known {
		return "Claude's usage limit is reached; this message runs by itself at " + at + " UTC, when the limit resets."
	}
	return "Claude's usage limit is reached; this message runs by itself at " + at +
		" UTC (Claude did not say when the limit resets: that is a retry, later ones wait longer)."
}

// LimitWarning tells a thread once per window that Claude's usage is close
// to its limit.
func LimitWarning(resets time.Time) string {
	if resets.IsZero() {
		return "Claude's usage is close to its limit."
	}
	return "Claude's usage is close to its limit; it resets at " + resets.UTC().Format("15:04") + " UTC."
}

// LimitStatus is !status's line for an exhausted usage window ("" when
// none).
func LimitStatus(until time.Time, known bool) string {
	if until.IsZero() {
		return ""
	}
	s := "Usage limit reached: messages wait until " + until.UTC().Format("15:04") + " UTC"
	if !known {
		s += " (a retry: the reset is unknown)"
	}
	return s
}
