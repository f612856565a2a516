package connstate

import (
	"strings"
	"sync"
	"testing"

	"github.com/cc-connect/cc-connect/platform"
)

type recorder struct {
	mu     sync.Mutex // guards events
	events []string
}

func (r *recorder) PlatformError(p string) { r.add("error " + p) }
func (r *recorder) Reconnect(p string)     { r.add("reconnect " + p) }

func (r *recorder) add(e string) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

var _ platform.Observer = (*recorder)(nil)

func TestState(t *testing.T) {
	tests := []struct {
		name   string
		states []string
		want   string // the observer's events, comma separated
	}{
		{"clean start", []string{"connecting", "connected"}, ""},
		{"drop and come back", []string{"connected", "reconnecting: connection lost", "connected"}, "error dc,reconnect dc"},
		{"each retry is an error", []string{"reconnecting: a", "reconnecting: a", "connected"}, "error dc,error dc,reconnect dc"},
		{"refused", []string{"error: unauthorized"}, "error dc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New("dc", "not started")
			r := &recorder{}
			s.SetObserver(r)
			for _, st := range tt.states {
				s.Set(st)
			}
			if got := s.Get(); got != tt.states[len(tt.states)-1] {
				t.Errorf("Get = %q, want the last state set", got)
			}
			if got := strings.Join(r.events, ","); got != tt.want {
				t.Errorf("events %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStateWithoutObserver(t *testing.T) {
	s := New("tg", "not started")
	if got := s.Get(); got != "not started" {
		t.Errorf("Get = %q, want the initial state", got)
	}
	s.Set("reconnecting: down") // no observer: nothing to call
	r := &recorder{}
	s.SetObserver(r)
	s.SetObserver(nil)
	s.Set("connected")
	if len(r.events) != 0 {
		t.Errorf("events %v after the observer was removed", r.events)
	}
}
