package natstest

import (
	"sync"
	"time"
)

// Clock is a lease clock (kvlease.Clock) for tests: time moves only when
// the test calls Advance, so that a lease expires because the test says
// so, never because a busy machine starved a renewal. One Clock may serve
// every host of a test: the hosts' clocks then run at the same rate, which
// is all the leases assume of them.
type Clock struct {
	mu      sync.Mutex // guards now, waiters
	now     time.Time
	waiters []clockWaiter
}

type clockWaiter struct {
	at time.Time
	ch chan time.Time
}

// NewClock returns a clock standing at a fixed instant.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// At fires once the clock reaches t: at once for a time not after Now.
func (c *Clock) At(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, clockWaiter{at: t, ch: ch})
	return ch
}

// Advance moves time on by d and fires every timer then due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.moveTo(c.now.Add(d))
}

// AdvanceTo moves time on to t (never back) and fires every timer then
// due.
func (c *Clock) AdvanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.moveTo(t)
	}
}

func (c *Clock) moveTo(t time.Time) {
	c.now = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}
