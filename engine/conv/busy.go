package conv

import (
	"context"
	"sync"
)

// busyCount counts the engine's outstanding work (queued items, running
// turns, side questions, shell commands) so that WaitIdle can wait for none.
//
// Work must be counted before the goroutine that finishes it can see it:
// a session counts an item while it still holds s.mu, the lock under which
// its loop takes items from the FIFO. Otherwise the loop can run the item
// and uncount it first, and the late increment leaves the count above zero
// for good. So mu is a leaf lock: nothing else is locked while it is held,
// and add may be called with s.mu or e.mu held.
type busyCount struct {
	mu   sync.Mutex    // guards n and idle
	n    int           // may dip below zero only if a decrement overtakes its increment (a bug); it heals when the increment lands
	idle chan struct{} // closed and replaced whenever n reaches 0

	// onAdd, when set (tests only), runs after every change, with the
	// lock released.
	onAdd func(delta, n int)
}

func newBusyCount() *busyCount {
	return &busyCount{idle: make(chan struct{})}
}

func (b *busyCount) add(delta int) {
	if delta == 0 {
		return
	}
	b.mu.Lock()
	b.n += delta
	n := b.n
	if n == 0 {
		close(b.idle)
		b.idle = make(chan struct{})
	}
	hook := b.onAdd
	b.mu.Unlock()
	if hook != nil {
		hook(delta, n)
	}
}

// count returns the current count.
func (b *busyCount) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// wait returns when the count is zero, or ctx's error when ctx ends first.
func (b *busyCount) wait(ctx context.Context) error {
	for {
		b.mu.Lock()
		if b.n == 0 {
			b.mu.Unlock()
			return nil
		}
		ch := b.idle
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
