package conv

import (
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/render"
)

func TestUnifiedDiff(t *testing.T) {
	rel := func(p []string) []string { return []string{p[0][len("/ws/"):]} }
	tests := []struct {
		name    string
		patches []agentproc.FilePatch
		want    string
	}{
		{"created", []agentproc.FilePatch{{Path: "/ws/new.txt", Created: true, Content: "a\nb\nc"}},
			"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n"},
		{"created with a last newline", []agentproc.FilePatch{{Path: "/ws/n", Created: true, Content: "x\n"}},
			"--- /dev/null\n+++ b/n\n@@ -0,0 +1,1 @@\n+x\n"},
		{"created empty", []agentproc.FilePatch{{Path: "/ws/e", Created: true}}, "--- /dev/null\n+++ b/e\n"},
		{"edited (captures/checkpoint_turns)", []agentproc.FilePatch{{Path: "/ws/keep.txt", Hunks: []agentproc.Hunk{
			{OldStart: 1, OldLines: 2, NewStart: 1, NewLines: 3, Lines: []string{" one", "-two", "+TWO", "+three"}}}}},
			"--- a/keep.txt\n+++ b/keep.txt\n@@ -1,2 +1,3 @@\n one\n-two\n+TWO\n+three\n"},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unifiedDiff(tt.patches, rel); got != tt.want {
				t.Errorf("unifiedDiff = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLastTurnRefusal(t *testing.T) {
	const sid, u = "s1", "u1"
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	changed := lastTurn{UUID: u, SessionID: sid, Files: []string{"a"}}
	tests := []struct {
		name string
		lt   lastTurn
		arg  string
		cur  string
		want string
	}{
		{"revertible", changed, "", sid, ""},
		{"its own button", changed, u, sid, ""},
		{"no turn yet", lastTurn{}, "", sid, render.RevertNothing},
		{"another session", changed, "", "s2", render.RevertNothing},
		{"an earlier turn's button", changed, "u0", sid, render.RevertNotLast},
		{"reverted", lastTurn{UUID: u, SessionID: sid, Files: []string{"a"}, RevertedBy: "bob", RevertedAt: at}, "", sid, render.RevertAgain("bob", at)},
		{"no files", lastTurn{UUID: u, SessionID: sid}, "", sid, render.RevertNoFiles},
		{"an own turn since", lastTurn{UUID: u, SessionID: sid, Files: []string{"a"}, Own: true}, "", sid, render.RevertOwnTurn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.lt.refusal(tt.arg, tt.cur); got != tt.want {
				t.Errorf("refusal = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRevertRefusal: the one check of !revert, !status and the console
// refuses while a turn runs and with checkpoints off before it reads the
// record's note; otherwise the note decides.
func TestRevertRefusal(t *testing.T) {
	const sid, u = "s1", "u1"
	changed := lastTurn{UUID: u, SessionID: sid, Files: []string{"a"}}
	tests := []struct {
		name string
		st   revertState
		want string
	}{
		{"revertible", revertState{on: true, last: changed, session: sid}, ""},
		{"a turn running", revertState{busy: true, on: true, last: changed, session: sid}, render.RevertBusy},
		{"checkpoints off", revertState{last: changed, session: sid}, render.RevertOff},
		{"the note decides", revertState{on: true, last: changed, session: "s2"}, render.RevertNothing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := revertRefusal(tt.st, ""); got != tt.want {
				t.Errorf("revertRefusal = %q, want %q", got, tt.want)
			}
		})
	}
}
