package slack

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/platform/internal/backoff"
)

// editThrottle paces chat.update. Slack allows about 50 updates a minute
// for the whole workspace (Tier 3) and about one message a second per
// channel, and progress edits can come much faster. Edits of one message
// are coalesced: while one waits for its turn, a newer text replaces it,
// the superseded caller returns nil, and whoever sends takes the latest
// text. Nothing is dropped that a later edit does not cover, so the final
// edit always lands.
type editThrottle struct {
	mu       sync.Mutex // guards states, tokens, last, next
	states   map[string]*editState
	rate     float64 // workspace tokens per second
	burst    float64
	tokens   float64
	last     time.Time
	interval time.Duration        // least time between edits in one channel
	next     map[string]time.Time // channel -> earliest next edit
	now      func() time.Time
}

// editState is the queue of one message: at most one pending edit and a
// turn that one goroutine holds while it sends.
type editState struct {
	turn    chan struct{} // capacity 1; held while sending for this message
	pending *editReq
	refs    int // callers using this state; it leaves the map at zero
}

type editReq struct {
	desc  string // what the edit shows, for logs and tests
	apply func(context.Context) error
	done  chan error // capacity 1; gets the outcome at most once
}

func newEditThrottle(perMinute, burst int, interval time.Duration) *editThrottle {
	return &editThrottle{
		states:   map[string]*editState{},
		rate:     float64(perMinute) / 60,
		burst:    float64(burst),
		tokens:   float64(burst),
		interval: interval,
		next:     map[string]time.Time{},
		now:      time.Now,
	}
}

// do runs apply for the message key in channel, or returns nil early when
// a newer edit of the same message supersedes it. desc describes the edit.
func (t *editThrottle) do(ctx context.Context, key, channel, desc string, apply func(context.Context) error) error {
	r := &editReq{desc: desc, apply: apply, done: make(chan error, 1)}
	t.mu.Lock()
	st := t.states[key]
	if st == nil {
		st = &editState{turn: make(chan struct{}, 1)}
		t.states[key] = st
	}
	st.refs++
	if st.pending != nil {
		st.pending.done <- nil // superseded: the newer text covers it
	}
	st.pending = r
	t.mu.Unlock()
	defer t.release(key, st)

	select {
	case err := <-r.done:
		return err
	case st.turn <- struct{}{}:
	case <-ctx.Done():
		t.withdraw(st, r)
		return ctx.Err()
	}
	defer func() { <-st.turn }()

	for {
		select {
		case err := <-r.done:
			return err
		default:
		}
		wait := t.reserve(channel)
		if err := backoff.Sleep(ctx, wait); err != nil {
			t.unreserve()
			t.withdraw(st, r)
			return err
		}
		t.mu.Lock()
		cur := st.pending
		st.pending = nil
		t.mu.Unlock()
		if cur == nil {
			continue // r was answered meanwhile; the select above returns it
		}
		err := cur.apply(ctx)
		if cur != r && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// Our caller gave up while sending someone else's text: put it
			// back for its owner, who is waiting for the turn.
			t.mu.Lock()
			if st.pending == nil {
				st.pending = cur
			} else {
				cur.done <- nil
			}
			t.mu.Unlock()
			continue
		}
		cur.done <- err
	}
}

// withdraw removes r if it is still waiting; an r already taken by a sender
// gets its answer in its buffered channel, which nobody reads.
func (t *editThrottle) withdraw(st *editState, r *editReq) {
	t.mu.Lock()
	if st.pending == r {
		st.pending = nil
	}
	t.mu.Unlock()
}

func (t *editThrottle) release(key string, st *editState) {
	t.mu.Lock()
	st.refs--
	if st.refs == 0 && st.pending == nil && t.states[key] == st {
		delete(t.states, key)
	}
	t.mu.Unlock()
}

// reserve takes a workspace token and the channel's next slot and returns
// how long to wait before using them.
func (t *editThrottle) reserve(channel string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if !t.last.IsZero() {
		t.tokens = min(t.burst, t.tokens+now.Sub(t.last).Seconds()*t.rate)
	}
	t.last = now
	t.tokens--
	wait := time.Duration(0)
	if t.tokens < 0 {
		wait = time.Duration(-t.tokens / t.rate * float64(time.Second))
	}
	slot := now.Add(wait)
	if n := t.next[channel]; n.After(slot) {
		slot = n
	}
	t.next[channel] = slot.Add(t.interval)
	if len(t.next) > 1000 {
		for ch, n := range t.next {
			if n.Before(now) {
				delete(t.next, ch)
			}
		}
	}
	return slot.Sub(now)
}

// unreserve returns the workspace token of an edit that was not sent. The
// channel slot is kept: a gap in one channel costs little.
func (t *editThrottle) unreserve() {
	t.mu.Lock()
	t.tokens = min(t.burst, t.tokens+1)
	t.mu.Unlock()
}
