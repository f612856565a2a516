package fakeslack

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// bucket is a method's standing rate limit (SetRateLimit): Slack's tiers
// are per workspace, so one bucket serves every channel.
type bucket struct {
	perSecond float64
	burst     float64
	tokens    float64
	last      time.Time
}

// take spends a token, or says how long until one is there.
func (b *bucket) take(now time.Time) (ok bool, wait time.Duration) {
	b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.perSecond)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / b.perSecond * float64(time.Second))
}

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
	s.buckets[method] = &bucket{perSecond: float64(perMinute) / 60, burst: float64(max(burst, 1)),
		tokens: float64(max(burst, 1)), last: time.Now()}
}

// RateLimited returns how many calls of method the standing limit refused.
func (s *Server) RateLimited(method string) int {
	n := 0
	for _, c := range s.Calls(method) {
		if c.Error == "ratelimited" {
			n++
		}
	}
	return n
}

// Tier3PerMinute is Slack's Tier 3 rate (chat.update): about 50 calls a
// minute for the workspace, bursts allowed as long as the minute's count
// holds. New holds chat.update to it; SetWindowLimit and SetRateLimit
// change it.
const Tier3PerMinute = 50

// windowLimit holds a method to n accepted calls in any window of length
// d, bursts allowed: the shape of Slack's per-minute tiers.
type windowLimit struct {
	n int
	d time.Duration
}

// SetWindowLimit holds method to n calls in any window of length d across
// the workspace (Slack's tiers count calls a minute and let them come in
// bursts): a call that would make n+1 in the last d is answered HTTP 429
// ratelimited with Retry-After, and does nothing. n 0 lifts the limit.
func (s *Server) SetWindowLimit(method string, n int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.buckets, method)
	if n <= 0 {
		delete(s.windows, method)
		return
	}
	s.windows[method] = windowLimit{n: n, d: d}
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

// limitLocked applies the standing limit of method; callers hold s.mu.
func (s *Server) limitLocked(method string, now time.Time) (answer, bool) {
	if w, ok := s.windows[method]; ok {
		var in []time.Time
		for _, c := range s.calls {
			if c.Method == method && c.Error != "ratelimited" && now.Sub(c.At) < w.d {
				in = append(in, c.At)
			}
		}
		if len(in) < w.n {
			return answer{}, false
		}
		return rateLimited(in[len(in)-w.n].Add(w.d).Sub(now)), true
	}
	b := s.buckets[method]
	if b == nil {
		return answer{}, false
	}
	ok, wait := b.take(now)
	if ok {
		return answer{}, false
	}
	return rateLimited(wait), true
}

func rateLimited(wait time.Duration) answer {
	secs := int(math.Ceil(wait.Seconds()))
	return answer{status: http.StatusTooManyRequests, body: map[string]any{"ok": false, "error": "ratelimited"},
		header: map[string]string{"Retry-After": strconv.Itoa(max(secs, 1))}}
}

// SetWaitLimit sets how long the fake's waits (Wait and the waits built on
// it) last before they fail the test, instead of its default: tests that
// drive the real claude CLI, whose start alone takes seconds on a loaded
// machine, wait as long as the engine's own real-CLI tests do.
func (s *Server) SetWaitLimit(d time.Duration) { s.waitFor.Store(int64(d)) }

func (s *Server) waitLimit() time.Duration {
	if d := time.Duration(s.waitFor.Load()); d > 0 {
		return d
	}
	return waitLimit
}
