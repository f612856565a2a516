package connstate

import (
	"errors"
	"fmt"
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
	var (
		connecting = platform.ConnStatus{State: platform.Connecting}
		connected  = platform.ConnStatus{State: platform.Connected}
		lost       = platform.ConnStatus{State: platform.TransientDisconnect, Detail: "connection lost"}
		a          = platform.ConnStatus{State: platform.TransientDisconnect, Detail: "a"}
		refused    = platform.ConnStatus{State: platform.BadCredentials, Detail: "unauthorized"}
	)
	tests := []struct {
		name   string
		states []platform.ConnStatus
		want   string // the observer's events, comma separated
	}{
		{"clean start", []platform.ConnStatus{connecting, connected}, ""},
		{"drop and come back", []platform.ConnStatus{connected, lost, connected}, "error dc,reconnect dc"},
		{"each retry is an error", []platform.ConnStatus{a, a, connected}, "error dc,error dc,reconnect dc"},
		{"refused", []platform.ConnStatus{refused}, "error dc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New("dc")
			r := &recorder{}
			s.SetObserver(r)
			for _, st := range tt.states {
				s.Set(st.State, st.Detail)
			}
			if got := s.Get(); got != tt.states[len(tt.states)-1] {
				t.Errorf("Get = %v, want the last state set", got)
			}
			if got := strings.Join(r.events, ","); got != tt.want {
				t.Errorf("events %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStateWithoutObserver(t *testing.T) {
	s := New("tg")
	if got := s.Get(); got.State != platform.NotStarted || got.String() != "not started" {
		t.Errorf("Get = %v, want not started", got)
	}
	s.Set(platform.TransientDisconnect, "down") // no observer: nothing to call
	r := &recorder{}
	s.SetObserver(r)
	s.SetObserver(nil)
	s.Set(platform.Connected, "")
	if len(r.events) != 0 {
		t.Errorf("events %v after the observer was removed", r.events)
	}
}

func TestRefused(t *testing.T) {
	badToken := errors.New("token refused")
	tests := []struct {
		name string
		err  error
		want platform.ConnStatus
	}{
		{"the token", fmt.Errorf("bot x: %w", badToken), platform.ConnStatus{State: platform.BadCredentials, Detail: "bot x: token refused"}},
		{"anything else", errors.New("intents refused"), platform.ConnStatus{State: platform.Failing, Detail: "intents refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New("x")
			s.Refused(tt.err, badToken)
			if got := s.Get(); got != tt.want {
				t.Errorf("Refused(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
