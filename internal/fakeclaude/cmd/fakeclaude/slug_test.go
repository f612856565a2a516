package main

import (
	"strings"
	"testing"
)

// Vectors seen from the real CLI (PROTOCOL.md §6); agentproc's TestProjectSlug
// holds its own rule to the same ones.
func TestProjectFolder(t *testing.T) {
	long := "/home/dev/work/" + strings.Repeat("L", 230)
	for _, tt := range []struct{ path, want string }{
		{"/home/dev/work/my_proj.v2", "-home-dev-work-my-proj-v2"},
		{"/home/dev/work/My Proj@v2+x~y#z", "-home-dev-work-My-Proj-v2-x-y-z"},
		{"/home/dev/work/a.b_c-d=e,f(g)", "-home-dev-work-a-b-c-d-e-f-g-"},
		{"/home/dev/work/ünï_cødé", "-home-dev-work--n--c-d-"},
		{"/home/dev/work/emoji😀x", "-home-dev-work-emoji--x"},
		{"", ""},
		{"/" + strings.Repeat("a", 199), "-" + strings.Repeat("a", 199)},
		{long, "-home-dev-work-" + strings.Repeat("L", 200-15) + "-90luwz"},
	} {
		if got := projectFolder(tt.path); got != tt.want {
			t.Errorf("projectFolder(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestConfigDirOf(t *testing.T) {
	t.Setenv("HOME", "/h")
	t.Setenv("CLAUDE_CONFIG_DIR", "/c")
	if got := configDirOf("/w"); got != "/c" {
		t.Errorf("set: %q", got)
	}
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	if got := configDirOf("/w"); got != "/w" {
		t.Errorf("empty: %q, want the working directory", got)
	}
}
