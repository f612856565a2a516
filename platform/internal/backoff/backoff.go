// Package backoff holds the waiting the chat adapters share: capped,
// jittered exponential backoff for reconnect and retry loops, and a sleep
// that ends with its context. It owns no policy on when to retry; each
// adapter decides that from its platform's errors.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Delay returns the wait before retry number attempt (1 for the first):
// min doubled for each attempt after the first, capped at max, then
// jittered into [d/2, d] so that clients restarted together don't retry in
// step. A non-positive result of the doubling gives 0.
func Delay(attempt int, min, max time.Duration) time.Duration {
	d := min
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// Backoff counts consecutive failures of a loop and gives the next wait.
// The zero value with Min and Max set is ready to use; it is not safe for
// concurrent use (one loop owns it).
type Backoff struct {
	Min, Max time.Duration
	failures int
}

// Next counts one more failure and returns how long to wait before trying
// again (see Delay).
func (b *Backoff) Next() time.Duration {
	b.failures++
	return Delay(b.failures, b.Min, b.Max)
}

// Reset forgets the failures after a success, so the next wait is Min.
func (b *Backoff) Reset() { b.failures = 0 }

// Sleep waits d or until ctx ends, whichever comes first, and returns
// ctx.Err() when ctx ended (at once when d <= 0).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retry calls try until it succeeds, fails for good, or ctx ends: the
// start-up check an adapter makes before connecting (is the token good?),
// where network trouble is worth waiting out and a refusal is not. After a
// failure that try marks as not final, retrying is called with the error
// and the attempt number (1 for the first), to report it, and the loop
// waits Delay(attempt, min, max). Retry returns nil on success, try's
// error when it is final, and ctx's error when ctx ends first.
func Retry(ctx context.Context, min, max time.Duration, try func() (final bool, err error), retrying func(err error, attempt int)) error {
	for attempt := 1; ; attempt++ {
		final, err := try()
		if err == nil || final {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		retrying(err, attempt)
		if err := Sleep(ctx, Delay(attempt, min, max)); err != nil {
			return err
		}
	}
}
