package ctxindicator

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// LogMessage is the slog message under which the engine logs Figures after
// each turn, with LogAttrs as its attributes.
const LogMessage = "context_usage"

// OverflowMessage is the slog message for a Warn when Figures.Overflow is
// true: the reported context is larger than the window it was divided by.
const OverflowMessage = "Context usage past the window"

// Figures are both tracks for one turn of one session.
type Figures struct {
	// Tokens is track A: the last API call's input + cache_read +
	// cache_creation tokens (not result.usage, which sums a turn's calls).
	// Zero means no usage was reported yet.
	Tokens int64
	// Window is the divisor: the model's contextWindow from Claude Code
	// when it reported one, else the configured fallback.
	Window int64
	// WindowReported is true when Window came from Claude Code.
	WindowReported bool
	// SelfPct is track B, Claude's own estimate in percent; valid only
	// when HasSelf is true.
	SelfPct int
	HasSelf bool
}

// NewFigures builds track A from plain numbers. reportedWindow is the
// window Claude Code reported (0 when none); fallbackWindow is the
// configured fallback (0 means DefaultWindow). A fixed 200k divisor would
// show 1M-token models as full at a fifth of their window, so the reported
// window always wins.
func NewFigures(tokens, reportedWindow, fallbackWindow int64) Figures {
	f := Figures{Tokens: max(tokens, 0)}
	switch {
	case reportedWindow > 0:
		f.Window, f.WindowReported = reportedWindow, true
	case fallbackWindow > 0:
		f.Window = fallbackWindow
	default:
		f.Window = DefaultWindow
	}
	return f
}

// WithSelfReport returns f with track B set, clamped to 0..100.
func (f Figures) WithSelfReport(pct int) Figures {
	f.SelfPct, f.HasSelf = min(max(pct, 0), 100), true
	return f
}

// SDK returns track A as a whole percentage; ok is false when there is no
// token data yet.
func (f Figures) SDK() (pct int, ok bool) {
	if f.Tokens <= 0 || f.Window <= 0 {
		return 0, false
	}
	pct, _ = Percent(f.Tokens, f.Window)
	return pct, true
}

// Overflow reports that track A's raw value passed 100%: the caller logs a
// Warn (OverflowMessage) since the percentage shown is clamped.
func (f Figures) Overflow() bool {
	_, over := Percent(f.Tokens, f.Window)
	return over
}

// Drift is how far Claude's own estimate is from track A, in percentage
// points (self - sdk): positive when Claude thinks it is fuller than it is.
// ok is false unless both tracks are present.
func (f Figures) Drift() (points int, ok bool) {
	sdk, ok := f.SDK()
	if !ok || !f.HasSelf {
		return 0, false
	}
	return f.SelfPct - sdk, true
}

// LogAttrs returns the stable attributes the engine logs under LogMessage:
// session_key always; sdk_pct, input_tokens and context_window when track
// A is present; self_reported_pct when track B is; drift when both are.
func (f Figures) LogAttrs(sessionKey string) []slog.Attr {
	attrs := []slog.Attr{slog.String("session_key", sessionKey)}
	if pct, ok := f.SDK(); ok {
		attrs = append(attrs,
			slog.Int("sdk_pct", pct),
			slog.Int64("input_tokens", f.Tokens),
			slog.Int64("context_window", f.Window))
	}
	if f.HasSelf {
		attrs = append(attrs, slog.Int("self_reported_pct", f.SelfPct))
	}
	if d, ok := f.Drift(); ok {
		attrs = append(attrs, slog.Int("drift", d))
	}
	return attrs
}

// LogArgs is LogAttrs in the key/value form that slog.Info takes:
// slog.Info(ctxindicator.LogMessage, f.LogArgs(key)...).
func (f Figures) LogArgs(sessionKey string) []any {
	attrs := f.LogAttrs(sessionKey)
	args := make([]any, len(attrs))
	for i, a := range attrs {
		args[i] = a
	}
	return args
}

// StatusLine is the one-line summary for !status, showing both tracks and
// their drift, e.g.
// "Context: 31% (62,000 of 200,000 tokens); Claude's estimate: 35% (drift +4 points)".
func (f Figures) StatusLine() string {
	var b strings.Builder
	b.WriteString("Context: ")
	if pct, ok := f.SDK(); ok {
		assumed := ""
		if !f.WindowReported {
			// Claude Code did not say; the configured fallback may be wrong.
			assumed = ", window assumed"
		}
		if f.Overflow() {
			fmt.Fprintf(&b, "%d%% (%s tokens, past the %s window%s)", pct, groupDigits(f.Tokens), groupDigits(f.Window), assumed)
		} else {
			fmt.Fprintf(&b, "%d%% (%s of %s tokens%s)", pct, groupDigits(f.Tokens), groupDigits(f.Window), assumed)
		}
	} else {
		b.WriteString("no token data yet")
	}
	b.WriteString("; Claude's estimate: ")
	if f.HasSelf {
		fmt.Fprintf(&b, "%d%%", f.SelfPct)
		if d, ok := f.Drift(); ok {
			fmt.Fprintf(&b, " (drift %+d points)", d)
		}
	} else {
		b.WriteString("none")
	}
	return b.String()
}

// groupDigits writes n with comma thousands separators: 1000000 -> 1,000,000.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
