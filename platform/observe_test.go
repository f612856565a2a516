package platform

import (
	"fmt"
	"testing"
)

type countObserver struct{ errors, reconnects int }

func (c *countObserver) PlatformError(string) { c.errors++ }
func (c *countObserver) Reconnect(string)     { c.reconnects++ }

func TestObserveStatus(t *testing.T) {
	var (
		connecting = ConnStatus{State: Connecting}
		connected  = ConnStatus{State: Connected}
		stopped    = ConnStatus{State: Stopped}
		eof        = ConnStatus{State: TransientDisconnect, Detail: "eof"}
		revoked    = ConnStatus{State: BadCredentials, Detail: "token revoked"}
		conflict   = ConnStatus{State: Failing, Detail: "conflict"}
		standby    = ConnStatus{State: Standby, Detail: "another host polls"}
	)
	tests := []struct {
		states             []ConnStatus
		errors, reconnects int
	}{
		{[]ConnStatus{connecting, connected, stopped}, 0, 0},
		{[]ConnStatus{connecting, connected, eof, eof, connected}, 2, 1},
		{[]ConnStatus{connecting, revoked}, 1, 0},
		{[]ConnStatus{connected, conflict, conflict, connected}, 1, 1},
		{[]ConnStatus{connecting, standby, connected, standby}, 0, 0},
		{[]ConnStatus{connected, stopped, connected}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.states), func(t *testing.T) {
			c := &countObserver{}
			old := ConnStatus{}
			for _, s := range tt.states {
				ObserveStatus(c, "p", old, s)
				old = s
			}
			if c.errors != tt.errors || c.reconnects != tt.reconnects {
				t.Errorf("errors %d reconnects %d, want %d %d", c.errors, c.reconnects, tt.errors, tt.reconnects)
			}
		})
	}
	ObserveStatus(nil, "p", eof, connected) // nil observer: no panic
}

// TestConnStatusString: !status shows the state's words, then the detail.
func TestConnStatusString(t *testing.T) {
	tests := []struct {
		s    ConnStatus
		want string
	}{
		{ConnStatus{}, "not started"},
		{ConnStatus{State: Connecting}, "connecting"},
		{ConnStatus{State: Connected}, "connected"},
		{ConnStatus{State: TransientDisconnect, Detail: "connection lost"}, "reconnecting: connection lost"},
		{ConnStatus{State: BadCredentials, Detail: "telegram refused the bot token"}, "error: telegram refused the bot token"},
		{ConnStatus{State: Failing, Detail: "a webhook is set"}, "error: a webhook is set"},
		{ConnStatus{State: Standby, Detail: "another host polls"}, "standby: another host polls"},
		{ConnStatus{State: Stopped}, "stopped"},
		{ConnStatus{State: Stopped, Detail: "input closed"}, "stopped: input closed"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%#v: %q, want %q", tt.s, got, tt.want)
		}
	}
}
