package fakekit

import (
	"math"
	"time"
)

// The platforms hold a client to a rate in one of two shapes: a token
// bucket (Discord's per-route buckets, a rate with a burst) or a count in a
// rolling window (Slack's tiers: n calls in any minute, in bursts if need
// be; with n 1, the least gap Telegram keeps between two edits in a chat).
// Neither has a lock: its fake's lock guards it. Times come from the fake,
// which may run a clock of its own.

// Bucket is a token bucket: Burst calls at once, then Rate calls a second.
type Bucket struct {
	rate, burst float64
	tokens      float64
	last        time.Time
}

// NewBucket returns a full bucket at now: burst calls, refilled at rate a
// second (burst below 1 counts as 1).
func NewBucket(rate, burst float64, now time.Time) *Bucket {
	burst = max(burst, 1)
	return &Bucket{rate: rate, burst: burst, tokens: burst, last: now}
}

// Take spends a token at now, or says how long until one is there.
func (b *Bucket) Take(now time.Time) (wait time.Duration, ok bool) {
	b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second)), false
}

// Window holds calls to N in any span of D: a call that would make N+1
// within the last D is refused. It counts the calls Add was told of, so a
// fake decides which count (those it let through, say, whatever it
// answered them).
type Window struct {
	N int
	D time.Duration

	at []time.Time // calls counted, oldest first; none older than D before the newest
}

// Wait says how long from now until one more call fits: 0 when it fits now.
func (w *Window) Wait(now time.Time) time.Duration {
	in := w.at
	for len(in) > 0 && now.Sub(in[0]) >= w.D {
		in = in[1:]
	}
	if len(in) < w.N {
		return 0
	}
	return in[len(in)-w.N].Add(w.D).Sub(now)
}

// Add counts a call at at (no earlier than the calls counted before it).
func (w *Window) Add(at time.Time) {
	i := 0
	for i < len(w.at) && at.Sub(w.at[i]) >= w.D {
		i++
	}
	w.at = append(w.at[i:], at)
}

// Take counts a call at now if it fits, or says how long until one does.
func (w *Window) Take(now time.Time) (wait time.Duration, ok bool) {
	if wait := w.Wait(now); wait > 0 {
		return wait, false
	}
	w.Add(now)
	return 0, true
}

// MostWithin returns the most of the times at (oldest first) that fall in
// any span of length d: what a test of a budget asserts on.
func MostWithin(at []time.Time, d time.Duration) int {
	most := 0
	for i := range at {
		n := 0
		for j := i; j < len(at) && at[j].Sub(at[i]) < d; j++ {
			n++
		}
		most = max(most, n)
	}
	return most
}

// RetrySeconds is a wait as a Retry-After in whole seconds: rounded up, and
// at least 1, as Slack and Telegram send it.
func RetrySeconds(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}
