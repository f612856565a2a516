package coalesce

import (
	"sync"
	"time"
)

// Interval is a Pacer that spaces the sends of one scope at least d apart
// and leaves scopes independent of each other.
type Interval struct {
	d   time.Duration
	dOf func(scope string) time.Duration // when set, the spacing of each scope
	now func() time.Time                 // tests replace it

	mu    sync.Mutex           // guards slots
	slots map[string]time.Time // scope -> earliest next send
}

var _ Pacer = (*Interval)(nil)

// NewInterval returns a Pacer that spaces sends in one scope d apart.
func NewInterval(d time.Duration) *Interval {
	return &Interval{d: d, now: time.Now, slots: make(map[string]time.Time)}
}

// NewScopedInterval returns a Pacer that spaces sends in one scope by
// what spacing says for it: a platform whose limit differs by kind of chat
// (Telegram allows a group about a third of a private chat's rate).
func NewScopedInterval(spacing func(scope string) time.Duration) *Interval {
	return &Interval{dOf: spacing, now: time.Now, slots: make(map[string]time.Time)}
}

// Reserve books the next slot of scope. Its done(false) gives the slot
// back unless a later reservation in scope was made meanwhile.
func (p *Interval) Reserve(scope string) (time.Duration, func(bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if len(p.slots) >= 256 {
		// Forget idle scopes so the map stays small.
		for s, next := range p.slots {
			if next.Before(now) {
				delete(p.slots, s)
			}
		}
	}
	prev, had := p.slots[scope]
	slot := now
	if prev.After(slot) {
		slot = prev
	}
	d := p.d
	if p.dOf != nil {
		d = p.dOf(scope)
	}
	next := slot.Add(d)
	p.slots[scope] = next
	cancel := func(sent bool) {
		if sent {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if cur, ok := p.slots[scope]; ok && cur.Equal(next) {
			if had {
				p.slots[scope] = prev
			} else {
				delete(p.slots, scope)
			}
		}
	}
	return slot.Sub(now), cancel
}
