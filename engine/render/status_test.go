package render

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestStatusText(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		s    Status
		want string
	}{
		{"before the first turn", Status{Now: now, State: "idle", Workspace: "/w", Model: "default", Mode: "default"},
			"State: idle\nWorkspace: /w\nSession: none yet\nContext: no figures yet\nQueue: 0 waiting\nProcess: not running\n" +
				"Model: default\nPermission mode: default\nCost: $0.0000"},
		{"idle with a process", Status{Now: now, State: "idle", Workspace: "/w", SessionID: "s-1", Context: "Context: 3% (31,907 of 1,000,000 tokens)",
			Queue: 2, Pid: 42, IdleSince: now.Add(-90 * time.Second), LastTurn: now.Add(-2 * time.Minute), Model: "opus (set with !model)",
			Mode: "plan", CostUSD: 0.01094, People: []string{"ann", "bob"}, Platform: "connected",
			Extra: []string{"", "Spend: $1 of $10 today"}, Cluster: "\n\nCluster: 3 hosts"},
			"State: idle\nWorkspace: /w\nSession: s-1\nContext: 3% (31,907 of 1,000,000 tokens)\nQueue: 2 waiting\n" +
				"Process: alive, pid 42\nIdle: 1m\nLast turn: 2m ago\nModel: opus (set with !model)\nPermission mode: plan\nCost: $0.0109\n" +
				"People in this session: ann, bob\nPlatform: connected\nSpend: $1 of $10 today\n\nCluster: 3 hosts"},
		{"waiting for an answer", Status{Now: now, State: "requires_action", Workspace: "/w", Pid: 42, IdleSince: now.Add(-time.Hour),
			Model: "m", Mode: "default"},
			"State: requires_action (waiting for a permission answer)\nWorkspace: /w\nSession: none yet\nContext: no figures yet\n" +
				"Queue: 0 waiting\nProcess: alive, pid 42\nModel: m\nPermission mode: default\nCost: $0.0000"},
		{"the last turn's changes, revertible", Status{Now: now, State: "idle", Workspace: "/w", SessionID: "s-1", LastTurn: now.Add(-time.Minute),
			Model: "m", Mode: "default", Changes: TurnChanges{Files: []string{"a.go", "b`c.txt"}, Added: 4, Removed: 1}},
			"State: idle\nWorkspace: /w\nSession: s-1\nContext: no figures yet\nQueue: 0 waiting\nProcess: not running\nLast turn: 1m ago\n" +
				"Last turn changed: 2 files (+4 −1): `a.go`, `b'c.txt`\nRevert: possible (approvers: `!revert`)\n" +
				"Model: m\nPermission mode: default\nCost: $0.0000"},
		{"the last turn's changes, reverted", Status{Now: now, State: "idle", Workspace: "/w", SessionID: "s-1", LastTurn: now.Add(-time.Minute),
			Model: "m", Mode: "default", Changes: TurnChanges{Files: []string{"a.go"}, Added: 1}, Revert: RevertAgain("bob", now)},
			"State: idle\nWorkspace: /w\nSession: s-1\nContext: no figures yet\nQueue: 0 waiting\nProcess: not running\nLast turn: 1m ago\n" +
				"Last turn changed: 1 file (+1 −0): `a.go`\nRevert: not possible. The last turn was already reverted (by bob, 2026-05-01 12:00 UTC): it cannot be reverted twice.\n" +
				"Model: m\nPermission mode: default\nCost: $0.0000"},
		{"a refusal without changes is not shown", Status{Now: now, State: "idle", Workspace: "/w", Model: "m", Mode: "default", Revert: RevertNoFiles},
			"State: idle\nWorkspace: /w\nSession: none yet\nContext: no figures yet\nQueue: 0 waiting\nProcess: not running\n" +
				"Model: m\nPermission mode: default\nCost: $0.0000"},
		{"idle after a failed login", Status{Now: now, State: "idle", LoginFailed: true, Workspace: "/w", Model: "m", Mode: "default"},
			"State: idle; " + LoginFailedState + "\nWorkspace: /w\nSession: none yet\nContext: no figures yet\n" +
				"Queue: 0 waiting\nProcess: not running\nModel: m\nPermission mode: default\nCost: $0.0000"},
	}
	for _, tt := range tests {
		if got := StatusText(tt.s); got != tt.want {
			t.Errorf("%s: StatusText =\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}

func TestSessionsText(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	two := []Session{
		{ID: "aaa", Current: true, Size: 2048, ModTime: now.Add(-3 * time.Hour), FirstPrompt: "fix the build"},
		{ID: "bbb", Size: 10, ModTime: now.Add(-72 * time.Hour)},
	}
	var many []Session
	for i := range 23 {
		many = append(many, Session{ID: fmt.Sprintf("s%02d", i), ModTime: now, FirstPrompt: strings.Repeat("p", 100)})
	}
	tests := []struct {
		name      string
		s         Sessions
		has, lack []string
	}{
		{"none", Sessions{Now: now, Workspace: "/w"}, []string{"No Claude Code sessions in /w yet."}, []string{"left out"}},
		{"none, some left out", Sessions{Now: now, Workspace: "/w", Skipped: 2},
			[]string{"No Claude Code sessions in /w yet.\n(2 transcript file(s) whose name is not a Claude Code session id were left out; they cannot be resumed.)"}, nil},
		{"two", Sessions{Now: now, Workspace: "/w", List: two},
			[]string{"Sessions in /w (newest first):\n1. aaa (current) — 2 KB, 3h00m ago — fix the build\n2. bbb — 10 B, 3d ago — (no prompt)\nSend !resume <n> to switch."},
			[]string{"more"}},
		{"many", Sessions{Now: now, Workspace: "/w", List: many},
			[]string{"\n20. s19 — 0 B, 0s ago — " + strings.Repeat("p", 60) + "…", "\n… and 3 more\nSend !resume <n> to switch."}, []string{"s20"}},
	}
	for _, tt := range tests {
		got := SessionsText(tt.s)
		for _, want := range tt.has {
			if !strings.Contains(got, want) {
				t.Errorf("%s: lacks %q:\n%s", tt.name, want, got)
			}
		}
		for _, no := range tt.lack {
			if strings.Contains(got, no) {
				t.Errorf("%s: holds %q:\n%s", tt.name, no, got)
			}
		}
	}
}

func TestHelp(t *testing.T) {
	got := Help([]Command{{Name: "new", Help: "start fresh"}, {Name: "allow", Usage: "[always]", Help: "answer it"}, {Name: "deny"},
		{Name: "btw", Usage: "<question>", Help: "ask aside"}})
	want := "Commands (prefix ! or /):\n!new — start fresh\n!allow [always] / !deny — answer it\n!btw <question> — ask aside"
	if got != want {
		t.Errorf("Help =\n%s\nwant\n%s", got, want)
	}
}
