package discord

import (
	"sync"
	"time"
)

// dedupe remembers recently seen keys so a platform redelivery runs once.
// It is bounded (oldest forgotten first) and entries expire after ttl; the
// engine's durable dedupe on Message.ID covers restarts.
type dedupe struct {
	mu    sync.Mutex // guards seen and order
	max   int
	ttl   time.Duration
	now   func() time.Time
	seen  map[string]time.Time
	order []string
}

func newDedupe(max int, ttl time.Duration) *dedupe {
	return &dedupe{max: max, ttl: ttl, now: time.Now, seen: make(map[string]time.Time)}
}

// first records key and reports whether it was not seen within ttl.
func (d *dedupe) first(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	for len(d.order) > 0 {
		k := d.order[0]
		if len(d.order) <= d.max && now.Sub(d.seen[k]) < d.ttl {
			break
		}
		delete(d.seen, k)
		d.order = d.order[1:]
	}
	if t, ok := d.seen[key]; ok && now.Sub(t) < d.ttl {
		return false
	}
	d.seen[key] = now
	d.order = append(d.order, key)
	return true
}
