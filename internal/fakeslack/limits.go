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

// limitLocked applies the standing limit of method; callers hold s.mu.
func (s *Server) limitLocked(method string) (answer, bool) {
	b := s.buckets[method]
	if b == nil {
		return answer{}, false
	}
	ok, wait := b.take(time.Now())
	if ok {
		return answer{}, false
	}
	secs := int(math.Ceil(wait.Seconds()))
	return answer{status: http.StatusTooManyRequests, body: map[string]any{"ok": false, "error": "ratelimited"},
		header: map[string]string{"Retry-After": strconv.Itoa(max(secs, 1))}}, true
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
