package conv

import (
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/inbox"
)

// What the engine (its status, its tests) may read of the conversations,
// and the few things it may ask of one from outside its goroutine.

// Lookup is the conversation of key in memory, or nil.
func (e *Set) Lookup(key string) *Conversation { return e.live(key) }

// Len is the number of conversations in memory.
func (e *Set) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.sessions)
}

// Outstanding is the work not finished yet (queued items, running turns,
// side questions, shell commands, tails, notices in flight).
func (e *lifecycle) Outstanding() int { return e.busy.count() }

// Record is a copy of the conversation's record as it is now.
func (s *Conversation) Record() Record { return s.rb.get() }

// State is where the conversation is in its turn cycle: idle, running or
// requires_action.
func (s *Conversation) State() string {
	st, _, _ := s.mb.snapshot()
	return string(st)
}

// Pending is what the conversation's journal holds pending, nil when it is
// not open.
func (s *Conversation) Pending() []inbox.Entry {
	in := s.jr.file()
	if in == nil {
		return nil
	}
	return in.Pending()
}

// JournalOpen says whether the conversation's journal is open.
func (s *Conversation) JournalOpen() bool { return s.jr.file() != nil }

// Process is the conversation's live claude process, or nil.
func (s *Conversation) Process() procs.Process { return s.agent.Live() }

// Reap asks the conversation to close its process if it is idle.
func (s *Conversation) Reap() bool { return s.mb.pushControl(control{kind: ctrlReap}) }

// RetireIfIdle ends the conversation's goroutine when it has nothing to
// do (no process, no work, no shell command), as its idle timer would;
// false when it cannot.
func (s *Conversation) RetireIfIdle() bool { return s.retire() }

// AwaitReply makes the conversation take a plain reply in its thread as
// the answer to a question or a plan (as a running turn does while it
// waits on one); for tests of what happens when none is waiting any more.
func (s *Conversation) AwaitReply(on bool) { s.awaitText.Store(on) }

// ReapIdle asks every conversation to close its process if it is idle.
func (e *Set) ReapIdle() {
	e.mu.Lock()
	ss := make([]*Conversation, 0, len(e.sessions))
	for _, s := range e.sessions {
		ss = append(ss, s)
	}
	e.mu.Unlock()
	for _, s := range ss {
		s.Reap()
	}
}

// Activity is the state of the conversation of key in memory and the
// length of its queue; ok is false when it has none in memory (it is
// idle, its record on disk).
func Activity(e *Set, key string) (state string, queued int, ok bool) {
	s := e.live(key)
	if s == nil {
		return "", 0, false
	}
	st, n, _ := s.mb.snapshot()
	return string(st), n, true
}
