package slack

import (
	"sync"
	"time"
)

// seenSet remembers keys (event ids, channel:ts) for a while so that
// Slack's redeliveries and the double delivery of mentions run once. It is
// bounded in both size and age; the engine's durable dedupe on Message.ID
// covers what falls out of it (restarts, very late retries).
type seenSet struct {
	mu    sync.Mutex // guards at and order
	max   int
	ttl   time.Duration
	now   func() time.Time
	at    map[string]time.Time
	order []string // keys in insertion order, oldest first
}

func newSeenSet(max int, ttl time.Duration) *seenSet {
	return &seenSet{max: max, ttl: ttl, now: time.Now, at: map[string]time.Time{}}
}

// add records key and reports whether it was new.
func (s *seenSet) add(key string) bool {
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
	for len(s.order) >= s.max {
		delete(s.at, s.order[0])
		s.order = s.order[1:]
	}
	s.at[key] = now
	s.order = append(s.order, key)
	return true
}

// userCache maps user ids to display names, remembering failures briefly
// so a missing users:read scope costs one lookup per user per few minutes.
type userCache struct {
	mu      sync.Mutex // guards entries
	entries map[string]userEntry
}

type userEntry struct {
	name    string
	expires time.Time
}

func newUserCache() *userCache { return &userCache{entries: map[string]userEntry{}} }

func (c *userCache) get(id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok || time.Now().After(e.expires) {
		return "", false
	}
	return e.name, true
}

func (c *userCache) put(id, name string, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= 10000 {
		now := time.Now()
		for k, e := range c.entries {
			if now.After(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= 10000 {
			clear(c.entries)
		}
	}
	c.entries[id] = userEntry{name: name, expires: time.Now().Add(ttl)}
}
