package conv

import "context"

// acquireSlotCap waits for a process slot in ws under the workspace cap
// perWS (the binding's: wsCapFor). At the cap it posts "waiting for a free
// slot" once (through notify) and asks the oldest idle process to close
// early. It fails only when ctx ends or the engine stops, or when onCtrl
// (given with the requester's mailbox, it handles the controls that
// arrive while it waits) returns an error.
func (e *Set) acquireSlotCap(ctx context.Context, ws string, perWS int, requester string, notify func(),
	mb *mailbox, onCtrl func(control) error) error {
	var ctrl chan struct{}
	if mb != nil {
		ctrl = mb.ctrl
	}
	notified := false
	for {
		ok, wait, wsFull := e.slots.TryAcquireCap(ws, perWS)
		if ok {
			return nil
		}
		onlyWS := ""
		if wsFull {
			onlyWS = ws
		}
		// Spares give way first, then the longest idle conversation.
		if !e.spare.Yield(onlyWS) && !e.reapOldestIdle(requester, onlyWS) && !notified {
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
			return ErrStopped
		}
	}
}

// reapOldestIdle asks the session whose live process has been idle longest
// to close it, so that requester (a session key) can have its slot. onlyWS,
// when set, limits the choice to that workspace. It reports whether one
// was asked; the slot frees up asynchronously.
func (e *Set) reapOldestIdle(requester, onlyWS string) bool {
	e.mu.Lock()
	var victim *Conversation
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
