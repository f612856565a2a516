package discord

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform/internal/backoff"
	"github.com/cc-connect/cc-connect/platform/internal/retry"
)

// rest runs one REST call with ctx (bounded by requestTimeout per
// attempt) through the adapter's retry (retryPolicy): rate limits are
// waited out as Discord asks, however often they come, until ctx ends, so
// a reply is delayed, never dropped.
func (a *Adapter) rest(ctx context.Context, call func(opts ...discordgo.RequestOption) error) error {
	return a.retryPolicy().Do(ctx, "REST", true, func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, a.requestTimeout)
		defer cancel()
		return call(discordgo.WithContext(rctx))
	})
}

// retryPolicy is how the adapter retries Discord's calls (made for each
// call, so that it reads the adapter's fields as tests set them).
// discordgo's own retries are accounted for so that nothing is retried
// twice: its wait on a 429 is off (Session.ShouldRetryOnRateLimit: it
// sleeps with no way to cancel), so a 429 comes back as a RateLimitError
// and is waited out here; a 502 it retries itself (MaxRestRetries) and
// then reports in an error of its own, not a RESTError, which is final
// here.
func (a *Adapter) retryPolicy() retry.Policy {
	return retry.Policy{
		Platform:      "Discord",
		Classify:      discordVerdict,
		RateLimitWait: 50 * time.Millisecond,
		Transient:     3,
		Backoff:       func(n int) time.Duration { return backoff.Delay(n, a.backoffMin, a.backoffMax) },
		Log:           a.log,
	}
}

// discordVerdict reads discordgo's errors: a 429 names its wait in the
// body's retry_after (the transport drops the bucket headers: see
// forgetRateLimit); a server error is transient for a request that is
// safe to repeat, which a POST is not (a message or a thread may have been
// made).
func discordVerdict(err error) retry.Verdict {
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		var after time.Duration
		if rl.RateLimit != nil && rl.TooManyRequests != nil {
			after = rl.RetryAfter
		}
		return retry.Verdict{Kind: retry.RateLimited, After: after}
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil && re.Request != nil {
		code := re.Response.StatusCode
		if code >= 500 && re.Request.Method != http.MethodPost {
			return retry.Verdict{Kind: retry.Transient}
		}
	}
	return retry.Verdict{Kind: retry.Fail}
}
