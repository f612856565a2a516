// Package retry is the one way the chat adapters retry a platform call. A
// rate limit (HTTP 429, Telegram's flood control) is waited out for as long
// as the platform asks, however often it comes, until the caller's context
// ends: a reply is delayed, never dropped. A server error (5xx) is retried
// a few times with backoff, and only for a call that is safe to repeat (a
// post that failed with a 5xx may have posted). Anything else goes back to
// the caller at once.
//
// What an error means is each adapter's to say (Policy.Classify: Slack's
// Retry-After header, Discord's retry_after, Telegram's
// parameters.retry_after, as their client libraries hand them over); the
// loop is written here once. It owns no connection loop: reconnecting is
// backoff.Retry's and each adapter's Run.
package retry

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/cc-connect/cc-connect/platform/internal/backoff"
)

// Kind is what one failed attempt means for the next.
type Kind int

const (
	// Fail: not retried (a refusal, a bad request, a call that cannot be
	// repeated safely).
	Fail Kind = iota
	// RateLimited: the platform asks to wait (Verdict.After) and call again.
	RateLimited
	// Transient: a server error or a failed connection that may pass,
	// retried with backoff up to Policy.Transient times in a row when the
	// call is safe to repeat.
	Transient
)

// Verdict is what Policy.Classify makes of an attempt's error.
type Verdict struct {
	Kind Kind
	// After is how long the platform asked to wait (RateLimited); 0 when
	// it named no time: Policy.RateLimitWait applies.
	After time.Duration
}

// Policy is how one adapter retries its platform's calls.
type Policy struct {
	// Platform names the platform in the log ("Slack").
	Platform string
	// Classify reads an attempt's error (never nil).
	Classify func(err error) Verdict
	// RateLimitWait is the wait after a rate limit that names none. Zero
	// means one second.
	RateLimitWait time.Duration
	// Transient is how many transient failures in a row are retried.
	Transient int
	// Backoff is the wait before retry n (1 for the first) after a
	// transient failure. Nil means backoff.Delay(n, time.Second, time.Minute).
	Backoff func(n int) time.Duration
	// Sleep waits d or until ctx ends (backoff.Sleep when nil); tests
	// shorten or record the waits with it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Log hears of each wait; nil logs nothing.
	Log *slog.Logger
}

// Do calls call until it succeeds, fails for good, or ctx ends. name
// names the call in the log (the API method). safe says that the call may
// be repeated after a transient failure: a read, an edit, a delete, a
// post the platform dedupes. Do returns nil, the last error of call, or,
// when ctx ends first, ctx's error (wrapped, when it ended during a wait):
// a call that failed because its caller stopped waiting failed for that
// reason, whatever the platform's error says.
func (p Policy) Do(ctx context.Context, name string, safe bool, call func(ctx context.Context) error) error {
	transient := 0
	for {
		err := call(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch v := p.Classify(err); {
		case v.Kind == RateLimited:
			wait := cmp.Or(max(v.After, 0), p.RateLimitWait, time.Second)
			transient = 0
			p.log("rate limit, waiting", name, wait)
			if err := p.sleep(ctx, wait); err != nil {
				return fmt.Errorf("waiting out a rate limit of %s: %w", wait, err)
			}
		case v.Kind == Transient && safe && transient < p.Transient:
			transient++
			wait := p.backoff(transient)
			p.log("server error, retrying", name, wait)
			if err := p.sleep(ctx, wait); err != nil {
				return fmt.Errorf("waiting to retry: %w", err)
			}
		default:
			return err
		}
	}
}

func (p Policy) backoff(n int) time.Duration {
	if p.Backoff != nil {
		return p.Backoff(n)
	}
	return backoff.Delay(n, time.Second, time.Minute)
}

func (p Policy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	return backoff.Sleep(ctx, d)
}

// log reports a wait. The error is not logged: a platform's error text
// may carry what must not reach a log (Telegram's URLs hold the token), and
// the adapter reports the error that ends the call.
func (p Policy) log(msg, name string, wait time.Duration) {
	if p.Log == nil {
		return
	}
	if p.Platform != "" {
		msg = p.Platform + " " + msg
	}
	p.Log.Warn(msg, "method", name, "retry_after", wait)
}

// StatusError is a plain HTTP answer other than success, for a call an
// adapter makes without its platform's client library (a file download).
// Classify it with HTTPVerdict.
type StatusError struct {
	Code int
	// RetryAfter is the answer's Retry-After, 0 when it has none.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.Code, http.StatusText(e.Code))
}

// CheckStatus returns nil for a 2xx answer, else a *StatusError with the
// answer's Retry-After.
func CheckStatus(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	return &StatusError{Code: resp.StatusCode, RetryAfter: RetryAfter(resp.Header, time.Now())}
}

// HTTPVerdict is the verdict on a status code: 429 is a rate limit (after
// the wait given), 5xx transient, anything else a failure.
func HTTPVerdict(code int, after time.Duration) Verdict {
	switch {
	case code == http.StatusTooManyRequests:
		return Verdict{Kind: RateLimited, After: after}
	case code >= 500:
		return Verdict{Kind: Transient}
	}
	return Verdict{Kind: Fail}
}

// RetryAfter reads an HTTP Retry-After header, in seconds or as a date
// (RFC 9110), as a wait from now; 0 when it is missing or unreadable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
