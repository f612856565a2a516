package agentproc

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Usage limits (testdata/captures/rate_limit, docs/claude-code.md). With an
// API key, a request the API refuses with 429 ends the turn with a
// synthetic "API Error: Request rejected (429)" message and a result with
// api_error_status 429, and the CLI exits; the window's reset stays in the
// API's response headers, so the CLI's output does not name it. With a
// subscription login the CLI reports the window itself in
// rate_limit_event lines (status and resetsAt).

// ErrUsageLimit means the login's usage window is exhausted: the turn was
// refused, not failed. Callers keep the message and send it again once the
// window resets (LimitError.ResetsAt when the CLI said when).
var ErrUsageLimit = errors.New("usage limit reached")

// LimitError is the error of a turn refused for a usage limit.
type LimitError struct {
	// ResetsAt is when the window resets, from a rate_limit_event of the
	// turn; zero when the CLI did not say (an API key's 429).
	ResetsAt time.Time
	Text     string // the CLI's text, e.g. "API Error: Request rejected (429) · …"
}

func (e *LimitError) Error() string {
	msg := "turn refused: " + ErrUsageLimit.Error()
	if !e.ResetsAt.IsZero() {
		msg += fmt.Sprintf(" until %s", e.ResetsAt.UTC().Format(time.RFC3339))
	}
	if e.Text != "" {
		msg += ": " + e.Text
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrUsageLimit) hold.
func (e *LimitError) Unwrap() error { return ErrUsageLimit }

// RateLimit is a rate_limit_event: the CLI's report on the login's usage
// window.
type RateLimit struct {
	// Status is "allowed", "allowed_warning" or "rejected".
	Status string
	// ResetsAt is when the window resets; zero when not reported.
	ResetsAt time.Time
	// Type names the window, e.g. "five_hour" or "seven_day".
	Type string
}

func (RateLimit) isEvent() {}

// Warning reports whether the window is close to exhausted.
func (r RateLimit) Warning() bool { return r.Status == "allowed_warning" }

// Rejected reports whether the window is exhausted.
func (r RateLimit) Rejected() bool { return r.Status == "rejected" }

// wireRateLimit is rate_limit_info; resetsAt is in Unix seconds.
type wireRateLimit struct {
	Status        string  `json:"status"`
	ResetsAt      float64 `json:"resetsAt"`
	RateLimitType string  `json:"rateLimitType"`
}

func rateLimitEvent(w *wireLine) RateLimit {
	if w.RateLimitInfo == nil {
		return RateLimit{}
	}
	i := w.RateLimitInfo
	r := RateLimit{Status: i.Status, Type: i.RateLimitType}
	if i.ResetsAt > 0 {
		secs := i.ResetsAt
		if secs > 1e12 { // milliseconds, to be safe
			secs /= 1000
		}
		r.ResetsAt = time.Unix(int64(secs), 0).UTC()
	}
	return r
}

// limitText begins the CLI's text for a request refused with 429.
const limitText = "API Error: Request rejected (429)"

// limitError reports r as a LimitError when the turn was refused for a
// usage limit, else nil.
func limitError(r *Result) error {
	if !r.IsError || (r.APIErrorStatus != 429 && !strings.HasPrefix(strings.TrimSpace(r.Text), limitText)) {
		return nil
	}
	return &LimitError{ResetsAt: r.LimitResetsAt, Text: r.Text}
}
