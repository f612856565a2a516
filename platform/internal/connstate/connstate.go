// Package connstate holds a chat adapter's connection state: the words
// !status shows ("connected", "reconnecting: …", "error: …", "stopped")
// and the report of each change to the metrics' platform.Observer. What
// the states mean for counting is platform.ObserveStatus's business; when
// to change state is each adapter's.
package connstate

import (
	"sync"

	"github.com/cc-connect/cc-connect/platform"
)

// State is one adapter instance's connection state. It is safe for
// concurrent use; call New.
type State struct {
	name string // the instance name, reported to the observer

	mu     sync.Mutex // guards status and obs
	status string
	obs    platform.Observer
}

// New returns the state of the instance name, starting at status.
func New(name, status string) *State {
	return &State{name: name, status: status}
}

// Get returns the current state.
func (s *State) Get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Set changes the state and reports the change to the observer, if any.
// The observer is called without the lock held.
func (s *State) Set(status string) {
	s.mu.Lock()
	old, obs := s.status, s.obs
	s.status = status
	s.mu.Unlock()
	platform.ObserveStatus(obs, s.name, old, status)
}

// SetObserver makes later changes reach o (nil stops the reports).
func (s *State) SetObserver(o platform.Observer) {
	s.mu.Lock()
	s.obs = o
	s.mu.Unlock()
}
