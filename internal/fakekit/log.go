package fakekit

import (
	"slices"
	"sync"
	"testing"
)

// Log is what a fake records in order: the calls it answered, the acks it
// read, the frames a client sent. Each Add wakes the signal's waiters. All
// and Select read it whole; Next reads it as a queue, for a test that takes
// the calls one at a time.
type Log[T any] struct {
	sig *Signal

	mu      sync.Mutex // guards entries and read
	entries []T
	read    int // how many entries Next has passed
}

// NewLog returns an empty log whose Add notifies sig.
func NewLog[T any](sig *Signal) *Log[T] { return &Log[T]{sig: sig} }

// Add appends e, wakes waiters, and returns how many entries Next has not
// passed yet: a fake may refuse a backlog that only a client in a retry
// loop makes.
func (l *Log[T]) Add(e T) (unread int) {
	l.mu.Lock()
	l.entries = append(l.entries, e)
	unread = len(l.entries) - l.read
	l.mu.Unlock()
	l.sig.Notify()
	return unread
}

// All returns every entry, oldest first.
func (l *Log[T]) All() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

// Select returns the entries keep accepts, oldest first. keep runs under
// the log's lock: it must not call the fake.
func (l *Log[T]) Select(keep func(T) bool) []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []T
	for _, e := range l.entries {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// Count is len(Select(keep)).
func (l *Log[T]) Count(keep func(T) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.entries {
		if keep(e) {
			n++
		}
	}
	return n
}

// TryNext passes the entries Next has not passed yet up to the first that
// match accepts (nil: any), and returns it; false when none is there yet.
// The entries passed over are not offered again.
func (l *Log[T]) TryNext(match func(T) bool) (T, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.read < len(l.entries) {
		e := l.entries[l.read]
		l.read++
		if match == nil || match(e) {
			return e, true
		}
	}
	var zero T
	return zero, false
}

// Next waits for TryNext to find an entry, failing tb after the signal's
// limit. what names the entry in the failure.
func (l *Log[T]) Next(tb testing.TB, what string, match func(T) bool) T {
	tb.Helper()
	var got T
	l.sig.Wait(tb, what, func() bool {
		e, ok := l.TryNext(match)
		got = e
		return ok
	})
	return got
}
