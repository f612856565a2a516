package procs

import "sync"

// Caps enforces the caps on live agent processes, globally and per
// workspace. A holder releases its slot when its process is closed.
type Caps struct {
	max, perWS int

	mu      sync.Mutex // guards total, byWS and changed
	total   int
	byWS    map[string]int
	changed chan struct{} // closed and replaced when a slot may have freed up
}

func NewCaps(max, perWS int) *Caps {
	return &Caps{max: max, perWS: perWS, byWS: map[string]int{}, changed: make(chan struct{})}
}

// TryAcquire takes a slot for a process in ws. When it fails it returns a
// channel that is closed when trying again may succeed, and whether the
// workspace cap (rather than the global one) is the one that is full.
func (s *Caps) TryAcquire(ws string) (ok bool, wait <-chan struct{}, wsFull bool) {
	return s.TryAcquireCap(ws, s.perWS)
}

// TryAcquireCap is tryAcquire under a workspace cap of perWS (a binding's
// own, Setup.MaxProcessesPerWorkspace); 0 is none.
func (s *Caps) TryAcquireCap(ws string, perWS int) (ok bool, wait <-chan struct{}, wsFull bool) {
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

func (s *Caps) Release(ws string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total--
	s.byWS[ws]--
	if s.byWS[ws] <= 0 {
		delete(s.byWS, ws)
	}
	s.signalLocked()
}

// Signal wakes waiters without freeing a slot: a process became idle and
// may now be reaped for them.
func (s *Caps) Signal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signalLocked()
}

func (s *Caps) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Changed is closed when a slot may have freed up.
func (s *Caps) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Live is the number of slots held.
func (s *Caps) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}
