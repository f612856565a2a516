package fakeslack

import (
	"net/http"
	"strconv"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakekit"
)

// Slack's tiers are per workspace: one limit a method serves every
// channel. A method is held either to a rate with a burst (SetRateLimit,
// a token bucket) or to a count in a rolling window (SetWindowLimit, the
// shape of Slack's per-minute tiers and chat.update's default).

// SetRateLimit holds method to perMinute calls a minute across the
// workspace, burst at once, as Slack's tiers do (chat.update is Tier 3,
// about 50 a minute): a call past it is answered HTTP 429
// {"ok":false,"error":"ratelimited"} with Retry-After in whole seconds,
// and does nothing. perMinute 0 lifts the limit.
func (s *Server) SetRateLimit(method string, perMinute, burst int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.windows, method) // the test's limit replaces the default
	if perMinute <= 0 {
		delete(s.buckets, method)
		return
	}
	s.buckets[method] = fakekit.NewBucket(float64(perMinute)/60, float64(burst), time.Now())
}

// RateLimited returns how many calls of method the standing limit refused.
func (s *Server) RateLimited(method string) int {
	return s.calls.Count(func(c Call) bool { return c.Method == method && c.Error == "ratelimited" })
}

// Tier3PerMinute is Slack's Tier 3 rate (chat.update): about 50 calls a
// minute for the workspace, bursts allowed as long as the minute's count
// holds. New holds chat.update to it; SetWindowLimit and SetRateLimit
// change it.
const Tier3PerMinute = 50

// SetWindowLimit holds method to n calls in any window of length d across
// the workspace (Slack's tiers count calls a minute and let them come in
// bursts): a call that would make n+1 in the last d is answered HTTP 429
// ratelimited with Retry-After, and does nothing. n 0 lifts the limit.
// The calls made before count: the window is the workspace's, not the
// test's.
func (s *Server) SetWindowLimit(method string, n int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.buckets, method)
	if n <= 0 {
		delete(s.windows, method)
		return
	}
	w := &fakekit.Window{N: n, D: d}
	for _, c := range s.calls.Select(func(c Call) bool { return c.Method == method }) {
		countInWindow(w, c)
	}
	s.windows[method] = w
}

// countInWindow counts c in its method's window: every call Slack took
// (or refused for anything but the rate limit) counts, as it does on Slack.
func countInWindow(w *fakekit.Window, c Call) {
	if c.Error != "ratelimited" {
		w.Add(c.At)
	}
}

// MaxInWindow is the most calls of method that Slack accepted (or the fake
// refused for anything but the rate limit) within any window of length d:
// what a test of a budget asserts on.
func (s *Server) MaxInWindow(method string, d time.Duration) int {
	var at []time.Time
	for _, c := range s.Calls(method) {
		if c.Error != "ratelimited" {
			at = append(at, c.At)
		}
	}
	return fakekit.MostWithin(at, d)
}

// limitLocked applies the standing limit of method; callers hold s.mu.
func (s *Server) limitLocked(method string, now time.Time) (answer, bool) {
	if w := s.windows[method]; w != nil {
		if wait := w.Wait(now); wait > 0 {
			return rateLimited(fakekit.RetrySeconds(wait)), true
		}
		return answer{}, false
	}
	if b := s.buckets[method]; b != nil {
		if wait, ok := b.Take(now); !ok {
			return rateLimited(fakekit.RetrySeconds(wait)), true
		}
	}
	return answer{}, false
}

// rateLimited is Slack's refusal of a call over a rate limit.
func rateLimited(retryAfter int) answer {
	return answer{status: http.StatusTooManyRequests, body: map[string]any{"ok": false, "error": "ratelimited"},
		header: map[string]string{"Retry-After": strconv.Itoa(retryAfter)}}
}
