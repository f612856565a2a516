// Package lanes runs an adapter's inbound work in order per conversation
// and conversations concurrently: one lane per key (what the adapter calls
// a conversation, the way the engine keys its sessions), each drained by a
// goroutine of its own that ends when its lane is empty. One slow platform
// call or download then holds up only the conversation it belongs to,
// while the events of one conversation keep the order they came in.
//
// Everything is bounded: at most n items are queued or running across
// all lanes (Add waits for room), so at most n goroutines exist, and
// Close waits for every one of them. The package knows nothing of any
// platform or of the engine.
package lanes

import (
	"context"
	"sync"
)

// Lanes is a set of ordered lanes. Create it with New.
type Lanes struct {
	ctx   context.Context // handed to the work
	slots chan struct{}   // one token per item queued or running
	wg    sync.WaitGroup  // one per live lane goroutine

	mu     sync.Mutex       // guards lanes and closed
	lanes  map[string]*lane // live lanes: each has exactly one goroutine
	closed bool
}

// lane is one key's queue; the lane's goroutine runs its items in order.
type lane struct {
	queue []func(context.Context)
}

// New returns lanes whose work runs with ctx (work should give up when it
// ends) and that hold at most n items at a time (at least one).
func New(ctx context.Context, n int) *Lanes {
	return &Lanes{ctx: ctx, slots: make(chan struct{}, max(n, 1)), lanes: map[string]*lane{}}
}

// Add queues work on key's lane: it runs after everything added to that
// key before it, and concurrently with other keys' work. When the lanes
// are full Add waits for room; it gives up, returning false, when stop is
// done first or the lanes are closed. Work added before Close always runs.
func (l *Lanes) Add(stop <-chan struct{}, key string, work func(context.Context)) bool {
	select {
	case l.slots <- struct{}{}:
	case <-stop:
		return false
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.slots
		return false
	}
	ln, live := l.lanes[key]
	if !live {
		ln = &lane{}
		l.lanes[key] = ln
		l.wg.Add(1)
	}
	ln.queue = append(ln.queue, work)
	l.mu.Unlock()
	if !live {
		go l.drain(key, ln)
	}
	return true
}

// drain runs a lane's items until it is empty, then forgets the lane, so
// that the next Add for the key starts a new goroutine. An item's slot is
// given back under the lock that forgets the lane: whoever gets the room
// finds the lane gone once it was the last item.
func (l *Lanes) drain(key string, ln *lane) {
	defer l.wg.Done()
	l.mu.Lock()
	for {
		work := ln.queue[0]
		ln.queue[0] = nil
		ln.queue = ln.queue[1:]
		l.mu.Unlock()
		work(l.ctx)
		l.mu.Lock()
		<-l.slots // held since Add: never waits
		if len(ln.queue) == 0 {
			delete(l.lanes, key)
			l.mu.Unlock()
			return
		}
	}
}

// Active reports how many lanes have work queued or running.
func (l *Lanes) Active() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lanes)
}

// Close refuses further work and waits until everything added has run
// (cancel the work's ctx first to make it quick).
func (l *Lanes) Close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.wg.Wait()
}
