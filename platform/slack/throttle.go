package slack

import (
	"slices"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
)

// editPacer paces chat.update. Slack allows a workspace about 50 updates a
// minute (Tier 3, shared by every conversation; it lets calls come in
// bursts as long as the minute's count holds), and progress edits can come
// much faster. So, unlike the per-message interval the other adapters use:
//
//   - every edit counts against one budget of the workspace: at most
//     perMinute in any window (a minute), a call counted as made now while
//     it is in flight and from when it ended once it returned, so that
//     however late Slack received it, the window it counts in holds it;
//   - ordinary edits (a streamed reply's progress, status lines) also take
//     a token from a bucket that refills at perMinute a minute (bursts of
//     burst), keep the interval within their channel, and leave reserve of
//     the window's budget unused;
//   - the last edit of a streamed reply (ReserveFirst) skips the bucket and
//     the channel's interval and may use the reserve: it waits only when
//     the window's budget is spent, so the finished reply shows at once
//     whatever the stream's pacing, and the budget still holds.
//
// Edits of one message are folded by a coalesce.Coalescer in front of it:
// while one waits for its slot a newer text replaces it, and the final
// edit always lands.
type editPacer struct {
	mu       sync.Mutex // guards every field below but now
	budget   int        // calls in any window
	reserve  int        // of budget, kept for first edits
	window   time.Duration
	books    []*booking // calls in flight or within the last window
	rate     float64    // ordinary edits' tokens per second
	burst    float64
	tokens   float64
	last     time.Time
	interval time.Duration        // least time between ordinary edits in one channel
	next     map[string]time.Time // channel -> earliest next ordinary edit
	now      func() time.Time
}

// booking is one call counted in the window: in flight from when it was
// booked, then counted from when it ended (at).
type booking struct {
	at     time.Time
	flying bool
}

var _ coalesce.FirstPacer = (*editPacer)(nil)

func newEditPacer(perMinute, burst int, interval time.Duration) *editPacer {
	return newWindowPacer(perMinute, burst, interval, time.Minute)
}

// newWindowPacer is newEditPacer with a window other than Slack's minute
// (tests).
func newWindowPacer(budget, burst int, interval, window time.Duration) *editPacer {
	budget = max(budget, 1)
	return &editPacer{
		budget:   budget,
		reserve:  min(max(budget/5, 1), budget-1),
		window:   window,
		rate:     float64(budget) / window.Seconds(),
		burst:    float64(max(burst, 1)),
		tokens:   float64(max(burst, 1)),
		interval: interval,
		next:     map[string]time.Time{},
		now:      time.Now,
	}
}

// Reserve books an ordinary edit when a bucket token, the channel's slot
// and room in the window below the reserve are all there now; otherwise it
// books nothing and says how long to wait before asking again (a nil done).
// Its done(false) returns the token and the booking of an edit that was
// not sent; the channel slot is kept: a gap in one channel costs little.
func (p *editPacer) Reserve(channel string) (time.Duration, func(bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.forget(now)
	if !p.last.IsZero() {
		p.tokens = min(p.burst, p.tokens+now.Sub(p.last).Seconds()*p.rate)
	}
	p.last = now
	slot := now
	if p.tokens < 1 {
		slot = now.Add(time.Duration((1 - p.tokens) / p.rate * float64(time.Second)))
	}
	if n := p.next[channel]; n.After(slot) {
		slot = n
	}
	if w := p.wait(now, p.budget-p.reserve); now.Add(w).After(slot) {
		slot = now.Add(w)
	}
	if slot.After(now) {
		return slot.Sub(now), nil
	}
	p.tokens--
	p.next[channel] = now.Add(p.interval)
	if len(p.next) > 1000 {
		for ch, n := range p.next {
			if n.Before(now) {
				delete(p.next, ch)
			}
		}
	}
	b := p.book(now)
	return 0, func(sent bool) {
		p.done(b, sent)
		if !sent {
			p.mu.Lock()
			p.tokens = min(p.burst, p.tokens+1)
			p.mu.Unlock()
		}
	}
}

// ReserveFirst books the last edit of a reply as soon as the window has
// room for it, the reserve included (a nil done and a wait when it has
// not). It takes no bucket token and leaves the channel's slots alone.
func (p *editPacer) ReserveFirst(string) (time.Duration, func(bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.forget(now)
	if w := p.wait(now, p.budget); w > 0 {
		return w, nil
	}
	b := p.book(now)
	return 0, func(sent bool) { p.done(b, sent) }
}

// wait is how long from now until the window holds fewer than limit calls.
// A call still in flight counts as made now: Slack may not have counted it
// yet, and it must not leave the window before it was even received.
func (p *editPacer) wait(now time.Time, limit int) time.Duration {
	if len(p.books) < limit {
		return 0
	}
	// In flight, a call counts as made now (after every call that ended).
	books := slices.Clone(p.books)
	slices.SortFunc(books, func(a, b *booking) int {
		switch {
		case a.flying != b.flying && a.flying:
			return 1
		case a.flying != b.flying:
			return -1
		}
		return a.at.Compare(b.at)
	})
	// The oldest len-limit+1 calls must leave the window first.
	last := books[len(books)-limit]
	if last.flying {
		// It counts from when it ends, soon: ask again then.
		return min(p.window, flightRecheck)
	}
	return last.at.Add(p.window).Sub(now)
}

// flightRecheck is how soon an edit that waits for a call in flight to
// leave the window asks again.
const flightRecheck = 50 * time.Millisecond

func (p *editPacer) book(at time.Time) *booking {
	b := &booking{at: at, flying: true}
	p.books = append(p.books, b)
	return b
}

// done ends a booking: a call that was sent counts from when it ended; one
// that was not is removed.
func (p *editPacer) done(b *booking, sent bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !sent {
		p.books = slices.DeleteFunc(p.books, func(x *booking) bool { return x == b })
		return
	}
	b.at, b.flying = p.now(), false
}

// forget drops the calls that no window from now on holds.
func (p *editPacer) forget(now time.Time) {
	p.books = slices.DeleteFunc(p.books, func(b *booking) bool {
		return !b.flying && !b.at.After(now.Add(-p.window))
	})
}
