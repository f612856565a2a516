package slack

import (
	"sync"
	"time"
)

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
