package platform

import (
	"fmt"
	"testing"
)

type countObserver struct{ errors, reconnects int }

func (c *countObserver) PlatformError(string) { c.errors++ }
func (c *countObserver) Reconnect(string)     { c.reconnects++ }

func TestObserveStatus(t *testing.T) {
	tests := []struct {
		states             []string
		errors, reconnects int
	}{
		{[]string{"connecting", "connected", "stopped"}, 0, 0},
		{[]string{"connecting", "connected", "reconnecting: eof", "reconnecting: eof", "connected"}, 2, 1},
		{[]string{"connecting", "error: token revoked"}, 1, 0},
		{[]string{"connected", "error: conflict", "connected"}, 1, 1},
		{[]string{"connecting", "stopped: invalid_auth"}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.states), func(t *testing.T) {
			c := &countObserver{}
			old := ""
			for _, s := range tt.states {
				ObserveStatus(c, "p", old, s)
				old = s
			}
			if c.errors != tt.errors || c.reconnects != tt.reconnects {
				t.Errorf("errors %d reconnects %d, want %d %d", c.errors, c.reconnects, tt.errors, tt.reconnects)
			}
		})
	}
	ObserveStatus(nil, "p", "reconnecting: x", "connected") // nil observer: no panic
}
