package slack

import (
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
)

// editPacer paces chat.update. Slack allows about 50 updates a minute for
// the whole workspace (Tier 3) and about one message a second per channel,
// and progress edits can come much faster. So, unlike the per-message
// interval the other adapters use, each edit takes a token from one
// workspace bucket and the next slot of its channel (the scope). Edits of
// one message are folded by a coalesce.Coalescer in front of it: while one
// waits for its slot a newer text replaces it, and the final edit always
// lands.
type editPacer struct {
	mu       sync.Mutex // guards tokens, last, next
	rate     float64    // workspace tokens per second
	burst    float64
	tokens   float64
	last     time.Time
	interval time.Duration        // least time between edits in one channel
	next     map[string]time.Time // channel -> earliest next edit
	now      func() time.Time
}

var _ coalesce.Pacer = (*editPacer)(nil)

func newEditPacer(perMinute, burst int, interval time.Duration) *editPacer {
	return &editPacer{
		rate:     float64(perMinute) / 60,
		burst:    float64(burst),
		tokens:   float64(burst),
		interval: interval,
		next:     map[string]time.Time{},
		now:      time.Now,
	}
}

// Reserve takes a workspace token and the channel's next slot and returns
// how long to wait before using them. Its cancel returns the token of an
// edit that was not sent; the channel slot is kept: a gap in one channel
// costs little.
func (p *editPacer) Reserve(channel string) (time.Duration, func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if !p.last.IsZero() {
		p.tokens = min(p.burst, p.tokens+now.Sub(p.last).Seconds()*p.rate)
	}
	p.last = now
	p.tokens--
	wait := time.Duration(0)
	if p.tokens < 0 {
		wait = time.Duration(-p.tokens / p.rate * float64(time.Second))
	}
	slot := now.Add(wait)
	if n := p.next[channel]; n.After(slot) {
		slot = n
	}
	p.next[channel] = slot.Add(p.interval)
	if len(p.next) > 1000 {
		for ch, n := range p.next {
			if n.Before(now) {
				delete(p.next, ch)
			}
		}
	}
	return slot.Sub(now), p.unreserve
}

func (p *editPacer) unreserve() {
	p.mu.Lock()
	p.tokens = min(p.burst, p.tokens+1)
	p.mu.Unlock()
}
