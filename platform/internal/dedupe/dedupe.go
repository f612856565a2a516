// Package dedupe remembers recently seen keys (event ids, message ids,
// update ids) so that a chat platform's redeliveries are handled once. It
// holds memory only, bounded in size and age: the engine's durable dedupe
// on Message.ID covers what falls out of it (restarts, very late retries).
// It knows nothing of any platform's wire format.
package dedupe

import (
	"sync"
	"time"
)

// Set is a bounded, expiring set of keys. The zero value is not usable;
// call New. It is safe for concurrent use.
type Set struct {
	mu    sync.Mutex // guards at and order
	max   int
	ttl   time.Duration
	now   func() time.Time // tests replace it
	at    map[string]time.Time
	order []string // keys in insertion order, oldest first (also age order)
}

// New returns a set that remembers at most max keys, each for ttl.
func New(max int, ttl time.Duration) *Set {
	return &Set{max: max, ttl: ttl, now: time.Now, at: make(map[string]time.Time)}
}

// First records key and reports whether it is new: not among the last max
// keys recorded, or recorded longer than ttl ago.
func (s *Set) First(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	// Expire from the front: order is also age order.
	for len(s.order) > 0 && now.Sub(s.at[s.order[0]]) >= s.ttl {
		delete(s.at, s.order[0])
		s.order = s.order[1:]
	}
	if _, ok := s.at[key]; ok {
		return false
	}
	for len(s.order) > 0 && len(s.order) >= s.max {
		delete(s.at, s.order[0])
		s.order = s.order[1:]
	}
	s.at[key] = now
	s.order = append(s.order, key)
	return true
}

// Len reports how many keys the set holds now.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.order)
}
