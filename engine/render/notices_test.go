package render

import (
	"strings"
	"testing"
	"time"
)

func TestCompactionReport(t *testing.T) {
	tests := []struct {
		name string
		c    Compaction
		want string
	}{
		{"compacted", Compaction{Done: true, PreTokens: 150000, PostTokens: 12500, BeforePct: 75, AfterPct: 6},
			"Compacted the conversation: 150,000 → 12,500 tokens of context (75% → 6%)."},
		{"failed", Compaction{Err: "prompt too long"}, "Compaction failed (prompt too long); the conversation is unchanged."},
		{"Claude said why not", Compaction{Said: "Nothing to compact.", Errors: []string{"x"}}, "Claude Code did not compact the conversation: Nothing to compact."},
		{"errors", Compaction{Errors: []string{"a", "b"}}, "Compaction failed: a; b"},
		{"nothing at all", Compaction{Said: "  "}, "Claude Code did not report a compaction; the conversation is unchanged."},
	}
	for _, tt := range tests {
		if got := CompactionReport(tt.c); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestNotices(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"queued", Queued(3), "Queued (position 3): it runs after the current turn."},
		{"late, queued", Late("  first\n", Queued(2)), "“first” reached cc-connect after a later message of this conversation had started, so it is answered after that one. Queued (position 2): it runs after the current turn."},
		{"late, now", Late("x", RunsNow), "“x” reached cc-connect after a later message of this conversation had started, so it is answered after that one. It runs now."},
		{"not an approver", NotApprover("ann"), "ann is not allowed to answer permission requests here."},
		{"dropped at shutdown", ShutdownDropped("do it"), "cc-connect is shutting down; this message was not processed. Please send it again later: do it"},
		{"new", NewSession("", ""), "Started a new session: your next message begins with a fresh context."},
		{"new after one", NewSession("s-1", ""), "Started a new session: your next message begins with a fresh context. (The previous session s-1 stays on disk; !sessions lists it.)"},
		{"new in a worktree", NewSession("s-1", "cc/t1"), "Started a new session: your next message begins with a fresh context. (The previous session s-1 stays on disk; !sessions lists it.) Its worktree (branch cc/t1) is kept: `cc-connect worktrees` lists it; the next message works in a new one."},
		{"worktree", Worktree("cc/t1", "main", "2 commits ahead", ""), "Worktree: branch cc/t1 of main, 2 commits ahead"},
		{"worktree not found", Worktree("cc/t1", "", "", "gone"), "Worktree: branch cc/t1 (its state could not be read: gone)"},
		{"worktree state unread", Worktree("cc/t1", "main", "", "git failed"), "Worktree: branch cc/t1 of main (its state could not be read: git failed)"},
		{"schedules", SchedulesNotAdmin("pause"), "Only this binding's admins can pause a schedule."},
		{"side", SideWritable("Bash"), "(side answer) not answered: the agent started with a tool that can change the workspace (Bash), so it was stopped."},
		{"model default", ModelDefault(""), "This conversation goes back to the configured model (Claude Code's default) from the next turn."},
		{"mode shown", ModeShown("plan", []string{"default", "plan"}), "Permission mode: plan\nAllowed here: default, plan. Send !mode <mode> to change it for this conversation."},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestAmounts(t *testing.T) {
	tests := []struct{ got, want string }{
		{Thousands(0), "0"}, {Thousands(999), "999"}, {Thousands(1000), "1,000"}, {Thousands(1234567), "1,234,567"}, {Thousands(-5), "-5"},
		{Size(12), "12 B"}, {Size(4096), "4 KB"}, {Size(3 << 19), "1.5 MB"},
		{Age(42 * time.Second), "42s"}, {Age(5 * time.Minute), "5m"}, {Age(3*time.Hour + 7*time.Minute), "3h07m"}, {Age(100 * time.Hour), "4d"},
		{Quote("  héllo world ", 5), "héllo…"}, {Quote("ok", 5), "ok"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// The reply to a turn without a login names both fixes and where to
// read more, quotes what Claude Code said, and keeps its control
// characters from reaching the chat.
func TestLoginNeeded(t *testing.T) {
	got := LoginNeeded("Not logged in · Please run /login\x1b[2J")
	for _, want := range []string{"Not logged in · Please run /login", "/login cannot be typed here", "claude auth login",
		"ANTHROPIC_API_KEY", "agent.env", "service unit", "cc-connect doctor", "docs/operations.md"} {
		if !strings.Contains(got, want) {
			t.Errorf("LoginNeeded lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("LoginNeeded passes an escape code on: %q", got)
	}
}
