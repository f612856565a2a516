package discord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform/internal/backoff"
)

// rest runs one REST call with ctx (bounded by requestTimeout per
// attempt) and waits out rate limits as Discord asks (retry_after),
// however often they come, until ctx ends: a reply is delayed, never
// dropped.
func (a *Adapter) rest(ctx context.Context, call func(opts ...discordgo.RequestOption) error) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, a.requestTimeout)
		err := call(discordgo.WithContext(rctx))
		cancel()
		var rl *discordgo.RateLimitError
		if !errors.As(err, &rl) {
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		wait := 50 * time.Millisecond
		if rl.RateLimit != nil && rl.TooManyRequests != nil && rl.RetryAfter > 0 {
			wait = rl.RetryAfter
		}
		a.log.Warn("Discord rate limit, waiting", "retry_after", wait, "url", rl.URL)
		if err := backoff.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("waiting out a discord rate limit: %w", err)
		}
	}
}
