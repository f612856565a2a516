package fakekit

import (
	"iter"
	"sync"
	"testing"
)

// Store keeps the messages of a fake by key (a channel and a ts, an id), in
// the order they were first put, each with its version: 1 as posted, one
// more for each change (an edit, a reaction, a delete). A change wakes the
// signal's waiters.
//
// The store is guarded by its fake's lock, not one of its own: a fake
// checks and changes a message in the same step as the rest of its state
// (the channel exists, a limit allows it). The methods named …Locked expect
// that lock held; the others take it.
type Store[K comparable, M any] struct {
	mu    sync.Locker
	sig   *Signal
	clone func(*M) M // a copy a test may keep: no slice shared with the store

	msgs  map[K]*stored[M]
	order []K
}

type stored[M any] struct {
	m       *M
	version int
}

// NewStore returns an empty store guarded by mu, notifying sig, handing out
// messages copied by clone.
func NewStore[K comparable, M any](mu sync.Locker, sig *Signal, clone func(*M) M) *Store[K, M] {
	return &Store[K, M]{mu: mu, sig: sig, clone: clone, msgs: map[K]*stored[M]{}}
}

// PutLocked keeps m under k: a new message goes last in the order at
// version 1; one in place of a message already under k keeps its place and
// is that message's next version.
func (s *Store[K, M]) PutLocked(k K, m *M) {
	st, ok := s.msgs[k]
	if !ok {
		st = &stored[M]{}
		s.msgs[k] = st
		s.order = append(s.order, k)
	}
	st.m = m
	st.version++
	s.sig.Notify()
}

// LookupLocked returns the message under k, to read or change in place
// (then ChangedLocked).
func (s *Store[K, M]) LookupLocked(k K) (*M, bool) {
	st, ok := s.msgs[k]
	if !ok {
		return nil, false
	}
	return st.m, true
}

// ChangedLocked records that the message under k was changed in place: its
// next version. It wakes waiters.
func (s *Store[K, M]) ChangedLocked(k K) {
	if st, ok := s.msgs[k]; ok {
		st.version++
		s.sig.Notify()
	}
}

// AllLocked yields every message in the order first put.
func (s *Store[K, M]) AllLocked() iter.Seq[*M] {
	return func(yield func(*M) bool) {
		for _, k := range s.order {
			if !yield(s.msgs[k].m) {
				return
			}
		}
	}
}

// Get returns a copy of the message under k.
func (s *Store[K, M]) Get(k K) (M, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.msgs[k]
	if !ok {
		var zero M
		return zero, false
	}
	return s.clone(st.m), true
}

// Version returns the version of the message under k, 0 when there is none:
// a test compares it to tell whether a message changed since it looked.
func (s *Store[K, M]) Version(k K) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.msgs[k]; ok {
		return st.version
	}
	return 0
}

// Select returns copies of the messages keep accepts, in the order first
// put. keep runs under the fake's lock: it must not call the fake.
func (s *Store[K, M]) Select(keep func(*M) bool) []M {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []M
	for m := range s.AllLocked() {
		if keep(m) {
			out = append(out, s.clone(m))
		}
	}
	return out
}

// WaitFirst waits until a message that match accepts is kept and returns
// the first, in the order first put. match runs on copies, without the
// fake's lock.
func (s *Store[K, M]) WaitFirst(tb testing.TB, what string, match func(M) bool) M {
	tb.Helper()
	var found M
	s.sig.Wait(tb, what, func() bool {
		for _, m := range s.Select(func(*M) bool { return true }) {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// WaitKey waits until the message under k exists and cond accepts it, and
// returns it. cond runs on a copy, without the fake's lock.
func (s *Store[K, M]) WaitKey(tb testing.TB, k K, what string, cond func(M) bool) M {
	tb.Helper()
	var found M
	s.sig.Wait(tb, what, func() bool {
		m, ok := s.Get(k)
		found = m
		return ok && cond(m)
	})
	return found
}
