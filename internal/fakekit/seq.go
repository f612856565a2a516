package fakekit

import "sync/atomic"

// Seq hands out increasing numbers: message ids, update ids, envelope ids.
// The zero value starts at 1; it is safe for concurrent use.
type Seq struct{ last atomic.Int64 }

// Next returns the number after the last one handed out or passed.
func (s *Seq) Next() int64 { return s.last.Add(1) }

// Last returns the last number handed out or passed, 0 before any.
func (s *Seq) Last() int64 { return s.last.Load() }

// Past makes every later Next greater than v: ids a test chose itself
// (an update id, a message ts) are not handed out again.
func (s *Seq) Past(v int64) {
	for {
		cur := s.last.Load()
		if cur >= v || s.last.CompareAndSwap(cur, v) {
			return
		}
	}
}
