package fakekit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/testenv"
)

// DefaultWaitLimit bounds a wait unless SetLimit changes it: generous, for
// -race on a busy machine.
const DefaultWaitLimit = 15 * time.Second

// Signal tells waiters that something a fake records changed: the fake
// calls Notify after each change, and a wait checks its condition again
// each time. It has a lock of its own, so a fake may notify while holding
// its own lock.
type Signal struct {
	name  string       // the fake, named in a failed wait
	limit atomic.Int64 // SetLimit; 0 is DefaultWaitLimit

	mu sync.Mutex    // guards ch
	ch chan struct{} // closed by the next Notify; nil while nobody waits
}

// NewSignal returns the signal of the fake called name ("fakeslack").
func NewSignal(name string) *Signal { return &Signal{name: name} }

// Notify wakes everyone waiting for a change.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// Changed returns a channel that the next Notify closes.
func (s *Signal) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// SetLimit sets how long Wait waits before it fails the test; 0 restores
// DefaultWaitLimit. Tests that drive the real claude CLI, whose start alone
// takes seconds on a loaded machine, wait as long as the engine's own
// real-CLI tests do.
func (s *Signal) SetLimit(d time.Duration) { s.limit.Store(int64(d)) }

// Limit is how long Wait waits.
func (s *Signal) Limit() time.Duration {
	if d := time.Duration(s.limit.Load()); d > 0 {
		return d
	}
	return DefaultWaitLimit
}

// Wait blocks until cond holds, failing tb after Limit. cond runs with no
// lock of the fake held (it may call the fake's accessors), at once and
// after every Notify.
func (s *Signal) Wait(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	s.WaitWithin(tb, s.Limit(), what, cond)
}

// WaitWithin is Wait with a limit of the caller's: a turn of the real
// claude CLI on a loaded machine takes many times the default, and its
// tests wait as long as their run allows (testenv.HangLimit).
func (s *Signal) WaitWithin(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	testenv.WaitFor(tb, limit, s.name, what, s.Changed, cond)
}
