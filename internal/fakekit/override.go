package fakekit

import (
	"context"
	"slices"
	"sync"
)

// Overrides are answers a test puts ahead of a fake's own, by key (a
// method, "POST /channels/C1/messages"): each is given to one call (or to
// the next n, Set), in the order queued; a fake may keep several, one for
// each point of its answer where a test may step in. The zero value is
// ready; it has a lock of its own.
type Overrides[A any] struct {
	mu sync.Mutex // guards q
	q  map[string][]repeated[A]
}

// repeated is an answer for the next n calls.
type repeated[A any] struct {
	a A
	n int
}

// Add queues answers for the next calls of key, after those queued already.
func (o *Overrides[A]) Add(key string, a ...A) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.q == nil {
		o.q = map[string][]repeated[A]{}
	}
	for _, x := range a {
		o.q[key] = append(o.q[key], repeated[A]{x, 1})
	}
}

// Set replaces what is queued for key by a for the next n calls (n 0
// clears it).
func (o *Overrides[A]) Set(key string, n int, a A) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.q == nil {
		o.q = map[string][]repeated[A]{}
	}
	o.q[key] = nil
	if n > 0 {
		o.q[key] = []repeated[A]{{a, n}}
	}
}

// Next takes the answer queued first for key, if any.
func (o *Overrides[A]) Next(key string) (A, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.q[key]
	if len(q) == 0 {
		var zero A
		return zero, false
	}
	a := q[0].a
	if q[0].n--; q[0].n == 0 {
		o.q[key] = q[1:]
	}
	return a, true
}

// Holds make calls of a fake wait until the test releases them: a test
// catches a request in flight (a post that hangs, a download that does not
// end). A call's key (its method) and fields F (its form) say which hold
// applies.
type Holds[F any] struct {
	sig *Signal

	mu    sync.Mutex // guards holds and held
	holds []*hold[F] // in force, the newest last
	held  map[string]int
}

type hold[F any] struct {
	key   string
	match func(F) bool
	gate  chan struct{}
	once  sync.Once
}

func (h *hold[F]) open() { h.once.Do(func() { close(h.gate) }) }

// NewHolds returns holds that notify sig when a call is held.
func NewHolds[F any](sig *Signal) *Holds[F] { return &Holds[F]{sig: sig, held: map[string]int{}} }

// Hold makes the calls of key whose fields match accepts (nil: every call)
// wait until release is called, or ReleaseAll. The newest hold that applies
// to a call is the one it waits on.
func (h *Holds[F]) Hold(key string, match func(F) bool) (release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	x := &hold[F]{key: key, match: match, gate: make(chan struct{})}
	h.holds = append(h.holds, x)
	return func() {
		h.mu.Lock()
		h.holds = slices.DeleteFunc(h.holds, func(y *hold[F]) bool { return y == x })
		h.mu.Unlock()
		x.open()
	}
}

// Pass lets a call of key with fields f go on: at once when no hold
// applies, else once the hold is released. It counts a held call (Held)
// and wakes waiters. It reports false when ctx ended first (the client
// went away): the fake then answers nothing.
func (h *Holds[F]) Pass(ctx context.Context, key string, f F) bool {
	h.mu.Lock()
	var gate chan struct{}
	for i := len(h.holds) - 1; i >= 0; i-- {
		if x := h.holds[i]; x.key == key && (x.match == nil || x.match(f)) {
			gate = x.gate
			break
		}
	}
	if gate != nil {
		h.held[key]++
	}
	h.mu.Unlock()
	if gate == nil {
		return true
	}
	h.sig.Notify()
	select {
	case <-gate:
		return true
	case <-ctx.Done():
		return false
	}
}

// Held reports how many calls of key reached a hold so far.
func (h *Holds[F]) Held(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held[key]
}

// ReleaseAll releases every held call and lifts every hold: the fake is
// closing.
func (h *Holds[F]) ReleaseAll() {
	h.mu.Lock()
	holds := h.holds
	h.holds = nil
	h.mu.Unlock()
	for _, x := range holds {
		x.open()
	}
}
