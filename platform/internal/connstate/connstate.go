// Package connstate holds a chat adapter's connection state
// (platform.ConnStatus) and reports each change to the metrics'
// platform.Observer. What the states mean for counting is
// platform.ObserveStatus's business; when to change state is each
// adapter's.
package connstate

import (
	"errors"
	"sync"

	"github.com/cc-connect/cc-connect/platform"
)

// State is one adapter instance's connection state, platform.NotStarted
// at first. It is safe for concurrent use; call New.
type State struct {
	name string // the instance name, reported to the observer

	mu     sync.Mutex // guards status and obs
	status platform.ConnStatus
	obs    platform.Observer
}

// New returns the state of the instance name.
func New(name string) *State {
	return &State{name: name}
}

// Get returns the current state.
func (s *State) Get() platform.ConnStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Set changes the state, with the detail that says why, and reports the
// change to the observer, if any. The observer is called without the lock
// held.
func (s *State) Set(state platform.ConnState, detail string) {
	cur := platform.ConnStatus{State: state, Detail: detail}
	s.mu.Lock()
	old, obs := s.status, s.obs
	s.status = cur
	s.mu.Unlock()
	platform.ObserveStatus(obs, s.name, old, cur)
}

// SetObserver makes later changes reach o (nil stops the reports).
func (s *State) SetObserver(o platform.Observer) {
	s.mu.Lock()
	s.obs = o
	s.mu.Unlock()
}

// Refused sets the state for err, an error no retry fixes, with err's
// text: BadCredentials when the platform refused the token (errors.Is(err,
// badToken)), Failing for anything else the admin must look at (Discord's
// intents, the cluster's gate, an answer that does not decode).
func (s *State) Refused(err, badToken error) {
	state := platform.Failing
	if errors.Is(err, badToken) {
		state = platform.BadCredentials
	}
	s.Set(state, err.Error())
}
