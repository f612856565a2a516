package engine

import (
	"context"
	"sync"
)

// slots enforces the caps on live agent processes, globally and per
// workspace. A holder releases its slot when its process is closed.
type slots struct {
	max, perWS int

	mu      sync.Mutex // guards total, byWS and changed
	total   int
	byWS    map[string]int
	changed chan struct{} // closed and replaced when a slot may have freed up
}

func newSlots(max, perWS int) *slots {
	return &slots{max: max, perWS: perWS, byWS: map[string]int{}, changed: make(chan struct{})}
}

// tryAcquire takes a slot for a process in ws. When it fails it returns a
// channel that is closed when trying again may succeed, and whether the
// workspace cap (rather than the global one) is the one that is full.
func (s *slots) tryAcquire(ws string) (ok bool, wait <-chan struct{}, wsFull bool) {
	return s.tryAcquireCap(ws, s.perWS)
}

// tryAcquireCap is tryAcquire under a workspace cap of perWS (a binding's
// own, Setup.MaxProcessesPerWorkspace); 0 is none.
func (s *slots) tryAcquireCap(ws string, perWS int) (ok bool, wait <-chan struct{}, wsFull bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.max > 0 && s.total >= s.max {
		return false, s.changed, false
	}
	if perWS > 0 && s.byWS[ws] >= perWS {
		return false, s.changed, true
	}
	s.total++
	s.byWS[ws]++
	return true, nil, false
}

func (s *slots) release(ws string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total--
	s.byWS[ws]--
	if s.byWS[ws] <= 0 {
		delete(s.byWS, ws)
	}
	s.signalLocked()
}

// signal wakes waiters without freeing a slot: a process became idle and
// may now be reaped for them.
func (s *slots) signal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signalLocked()
}

func (s *slots) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *slots) live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// acquireSlotCap waits for a process slot in ws under the workspace cap
// perWS (the binding's: wsCapFor). At the cap it posts "waiting for a free
// slot" once (through notify) and asks the oldest idle process to close
// early. It fails only when ctx ends or the engine stops, or when onCtrl
// (given with the requester's mailbox, it handles the controls that
// arrive while it waits) returns an error.
func (e *Engine) acquireSlotCap(ctx context.Context, ws string, perWS int, requester string, notify func(),
	mb *mailbox, onCtrl func(control) error) error {
	var ctrl chan struct{}
	if mb != nil {
		ctrl = mb.ctrl
	}
	notified := false
	for {
		ok, wait, wsFull := e.slots.tryAcquireCap(ws, perWS)
		if ok {
			return nil
		}
		onlyWS := ""
		if wsFull {
			onlyWS = ws
		}
		// Spares give way first, then the longest idle conversation.
		if !e.spare.yield(onlyWS) && !e.reapOldestIdle(requester, onlyWS) && !notified {
			notified = true
			notify()
		}
		select {
		case <-wait:
		case <-ctrl:
			for c, ok := mb.takeControl(); ok; c, ok = mb.takeControl() {
				err := onCtrl(c)
				mb.counted(-1)
				if err != nil {
					return err
				}
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-e.stopping:
			return errStopped
		}
	}
}

// reapOldestIdle asks the session whose live process has been idle longest
// to close it, so that requester (a session key) can have its slot. onlyWS,
// when set, limits the choice to that workspace. It reports whether one
// was asked; the slot frees up asynchronously.
func (e *Engine) reapOldestIdle(requester, onlyWS string) bool {
	e.mu.Lock()
	var victim *session
	var oldest int64
	for _, s := range e.sessions {
		// requester may be picked too: a side question may reap its own
		// session's idle process (the fork reads the transcript, and the
		// next turn resumes).
		if onlyWS != "" && s.ws != onlyWS {
			continue
		}
		at, ok := s.idleLiveSince()
		if !ok {
			continue
		}
		if victim == nil || at < oldest {
			victim, oldest = s, at
		}
	}
	e.mu.Unlock()
	if victim == nil {
		return false
	}
	victim.mb.pushControl(control{kind: ctrlReap})
	return true
}
