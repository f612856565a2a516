package conv

import (
	"testing"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		in, name, args string
		ok             bool
	}{
		{"!new", "new", "", true},
		{"  !BTW what is   this? ", "btw", "what is   this?", true},
		{"/status", "status", "", true},
		{"/compact now", "compact", "now", true}, // ours: reports before and after
		{"/context", "", "", false},              // Claude Code's own command goes to the agent
		{"!bogus x", "bogus", "x", true},
		{"!", "", "", false},
		{"hello !new", "", "", false},
		{"/home/me/file.go explain", "", "", false},
	}
	for _, tt := range tests {
		name, args, ok := parseCommand(tt.in)
		if name != tt.name || args != tt.args || ok != tt.ok {
			t.Errorf("parseCommand(%q) = %q, %q, %v; want %q, %q, %v", tt.in, name, args, ok, tt.name, tt.args, tt.ok)
		}
	}
}
