// Package coalesce paces the edits of posted chat messages (progress
// updates) and folds the edits of one message that pile up while they
// wait: the latest text wins and the final one always lands. How fast
// edits may go is not its business: a Pacer, chosen by each adapter from
// its platform's rate limits, says when the next send may start. It starts
// no goroutine; each caller waits for its own turn.
package coalesce

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/platform/internal/backoff"
)

// Pacer books send slots. Reserve books the next send in scope and
// returns how long to wait before it starts, and done, called once: with
// false when that send will not happen after all (the waiter gave up, was
// woken to book again, or had nothing left to send), so the slot can be
// given back; with true once the send returned, so that a pacer that
// counts sends in a window can count this one from when it ended. A nil
// done means nothing was booked: the caller asks again after the wait (a
// pacer that books only what can go now).
type Pacer interface {
	Reserve(scope string) (wait time.Duration, done func(sent bool))
}

// FirstPacer is a Pacer that can book a send ahead of the others: the
// last edit of a message (the one that turns a streamed reply into the
// reply) goes as soon as the platform's own limit allows, not behind the
// spacing a pacer keeps between ordinary edits. ReserveFirst books it; a
// Pacer without it books such a send with Reserve.
type FirstPacer interface {
	Pacer
	ReserveFirst(scope string) (wait time.Duration, done func(sent bool))
}

// Coalescer queues the edits of each message (by key). While one edit of a
// message waits for its slot or is being sent, a newer one replaces any
// other that is waiting: the replaced caller returns nil at once, and the
// caller that holds the message's turn sends the newest text when its slot
// comes. Nothing is dropped that a later edit does not cover. Sends of one
// message never overlap, so a slow send cannot land after a newer one.
type Coalescer struct {
	pacer Pacer

	mu     sync.Mutex // guards states and each state's pending and refs
	states map[string]*state

	// queued, when set (tests), is called once a caller's edit is pending.
	queued func(key string)
}

// state is the queue of one message: at most one pending edit and a turn
// that one caller holds while it waits for a slot and sends.
type state struct {
	turn    chan struct{} // capacity 1; held while waiting and sending for this message
	wake    chan struct{} // capacity 1; a first edit wakes the turn's holder to book again
	pending *request
	refs    int // callers using this state; it leaves the map at zero
}

type request struct {
	desc  string // what the edit shows, for Pending (logs and tests)
	first bool   // DoFirst: booked ahead of ordinary edits
	send  func(context.Context) error
	done  chan error // capacity 1; gets the outcome at most once
}

// New returns a Coalescer whose sends are paced by p.
func New(p Pacer) *Coalescer {
	return &Coalescer{pacer: p, states: make(map[string]*state)}
}

// Do sends an edit of the message key, paced in scope (the message itself,
// or what the platform limits: a channel), or returns nil early when a
// newer edit of the same message supersedes it. desc describes the edit.
// send gets the context of whichever caller sends it. Do returns send's
// error, or ctx's when ctx ends before the edit was sent.
func (c *Coalescer) Do(ctx context.Context, key, scope, desc string, send func(context.Context) error) error {
	return c.do(ctx, key, scope, &request{desc: desc, send: send, done: make(chan error, 1)})
}

// DoFirst is Do for the last edit of a message: it supersedes a waiting
// edit of the message as Do does, and it is booked with the pacer's
// ReserveFirst (FirstPacer), waking the caller that holds the message's
// turn if that one waits for an ordinary slot, so that it does not wait
// behind the spacing of the edits before it.
func (c *Coalescer) DoFirst(ctx context.Context, key, scope, desc string, send func(context.Context) error) error {
	return c.do(ctx, key, scope, &request{desc: desc, first: true, send: send, done: make(chan error, 1)})
}

func (c *Coalescer) do(ctx context.Context, key, scope string, r *request) error {
	c.mu.Lock()
	st := c.states[key]
	if st == nil {
		st = &state{turn: make(chan struct{}, 1), wake: make(chan struct{}, 1)}
		c.states[key] = st
	}
	st.refs++
	if st.pending != nil {
		st.pending.done <- nil // superseded: the newer text covers it
	}
	st.pending = r
	if r.first {
		select {
		case st.wake <- struct{}{}:
		default:
		}
	}
	queued := c.queued
	c.mu.Unlock()
	defer c.release(key, st)
	if queued != nil {
		queued(key)
	}

	select {
	case err := <-r.done:
		return err
	case st.turn <- struct{}{}:
	case <-ctx.Done():
		c.withdraw(st, r)
		return ctx.Err()
	}
	defer func() { <-st.turn }()

	for {
		select {
		case err := <-r.done:
			return err
		default:
		}
		select {
		case <-st.wake: // a wake for an edit already in hand
		default:
		}
		c.mu.Lock()
		first := st.pending != nil && st.pending.first
		c.mu.Unlock()
		wait, done := c.reserve(scope, first)
		booked := done != nil
		if !booked {
			done = func(bool) {}
		}
		woken, err := c.sleep(ctx, st, wait, first)
		if err != nil {
			done(false)
			c.withdraw(st, r)
			return err
		}
		if woken || !booked {
			done(false) // a first edit came, or nothing was booked: ask again
			continue
		}
		c.mu.Lock()
		cur := st.pending
		st.pending = nil
		c.mu.Unlock()
		if cur == nil {
			// r was answered meanwhile (superseded by an edit whose caller
			// then gave up); the select above returns it.
			done(false)
			continue
		}
		err = cur.send(ctx)
		done(true)
		if cur != r && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// Our caller gave up while sending someone else's text: put it
			// back for its owner, who is waiting for the turn.
			c.mu.Lock()
			if st.pending == nil {
				st.pending = cur
			} else {
				cur.done <- nil
			}
			c.mu.Unlock()
			continue
		}
		cur.done <- err
	}
}

// reserve books the next send, ahead of the others when first and the
// pacer can.
func (c *Coalescer) reserve(scope string, first bool) (time.Duration, func(bool)) {
	if fp, ok := c.pacer.(FirstPacer); ok && first {
		return fp.ReserveFirst(scope)
	}
	return c.pacer.Reserve(scope)
}

// sleep waits d for an ordinary edit's slot, or until a first edit of the
// message wakes it (woken); a first edit's own wait is not cut short.
func (c *Coalescer) sleep(ctx context.Context, st *state, d time.Duration, first bool) (woken bool, err error) {
	if d <= 0 || first {
		return false, backoff.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-st.wake:
		return true, nil
	case <-t.C:
		return false, nil
	}
}

// withdraw removes r if it is still waiting; an r already taken by a sender
// gets its answer in its buffered channel, which nobody reads.
func (c *Coalescer) withdraw(st *state, r *request) {
	c.mu.Lock()
	if st.pending == r {
		st.pending = nil
	}
	c.mu.Unlock()
}

func (c *Coalescer) release(key string, st *state) {
	c.mu.Lock()
	st.refs--
	if st.refs == 0 && st.pending == nil && c.states[key] == st {
		delete(c.states, key)
	}
	c.mu.Unlock()
}

// Pending returns the description of the edit of key that waits to be
// sent, if any.
func (c *Coalescer) Pending(key string) (desc string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.states[key]; st != nil && st.pending != nil {
		return st.pending.desc, true
	}
	return "", false
}

// Len reports how many messages have edits in progress.
func (c *Coalescer) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.states)
}
