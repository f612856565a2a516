package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

// waitAsk waits for a permission prompt posted with buttons.
func waitAsk(t *testing.T, h *harness) recorded {
	t.Helper()
	var ask recorded
	h.rec.waitFor(t, "a permission prompt", func(calls []recorded) bool {
		for _, c := range calls {
			if c.Kind == "ask" {
				ask = c
				return true
			}
		}
		return false
	})
	return ask
}

func (h *harness) press(user, requestID string, choice platform.Choice) {
	h.t.Helper()
	err := h.e.HandleAction(context.Background(), platform.Action{
		Target:    platform.Target{Platform: "fake", Channel: "C1", Thread: "T1", MessageID: "prompt"},
		UserID:    user,
		UserName:  user,
		RequestID: requestID,
		Choice:    choice,
	})
	if err != nil {
		h.t.Fatalf("HandleAction: %v", err)
	}
}

func TestPermissionButtons(t *testing.T) {
	tests := []struct {
		name    string
		choice  platform.Choice
		outcome string
		reply   string
	}{
		{"allow once", platform.ChoiceAllow, "allowed once by alice", "ran: make test"},
		{"always allow", platform.ChoiceAlwaysAllow, "always allowed by alice", "ran: make test"},
		{"deny", platform.ChoiceDeny, "denied by alice", "denied: Denied by alice in chat."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.say("alice", "T1", "please [[TOOL:make test]]")
			ask := waitAsk(t, h)
			if ask.Prompt.Tool != "Bash" || !strings.Contains(ask.Prompt.Text, "Command:\n```\nmake test\n```") ||
				!strings.Contains(ask.Prompt.Text, "Path it needs:\n```\n") {
				t.Errorf("prompt = %+v", ask.Prompt)
			}
			st := h.e.convs.Lookup("fake/C1/T1")
			state := st.State()
			if state != "requires_action" {
				t.Errorf("state = %s while the prompt is pending, want %s", state, "requires_action")
			}
			h.press("alice", ask.Prompt.RequestID, tt.choice)
			h.rec.waitSend(t, tt.reply)
			res := h.rec.kinds("resolve")
			if len(res) != 1 || res[0].Text != tt.outcome || res[0].To.MessageID == "" {
				t.Errorf("resolved = %+v, want %q on the prompt", res, tt.outcome)
			}
			// The progress status went through the editor.
			if got := h.rec.sends("Running: Bash `make test`"); len(got) != 1 {
				t.Errorf("progress messages = %q", got)
			}
		})
	}
}

func TestPermissionFromUserNotAllowed(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "please [[TOOL:rm -rf build]]")
	ask := waitAsk(t, h)
	h.press("mallory", ask.Prompt.RequestID, platform.ChoiceAllow)
	h.rec.waitSend(t, "mallory is not allowed to answer")
	if got := h.rec.kinds("resolve"); len(got) != 0 {
		t.Fatalf("a refused answer resolved the prompt: %+v", got)
	}
	h.press("bob", ask.Prompt.RequestID, platform.ChoiceDeny)
	h.rec.waitSend(t, "denied: Denied by bob in chat.")
}

func TestPermissionTimeout(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.PermissionTimeout = 20 * time.Millisecond })
	h.say("alice", "T1", "please [[TOOL:deploy]]")
	reply := h.rec.waitSend(t, "denied: No answer in chat within 20ms")
	_ = reply
	res := h.rec.kinds("resolve")
	if len(res) != 1 || res[0].Text != "denied: no answer within 20ms" {
		t.Errorf("resolved = %+v", res)
	}
	// A late press finds nothing pending.
	h.press("alice", waitAsk(t, h).Prompt.RequestID, platform.ChoiceAllow)
	h.rec.waitSend(t, "no longer pending")
}

func TestPermissionAsTextWithoutButtons(t *testing.T) {
	tests := []struct {
		name, answer, outcome, reply string
	}{
		{"allow", "!allow", "Permission for Bash: allowed once by bob.", "ran: go test ./..."},
		{"allow always", "!allow always", "Permission for Bash: always allowed by bob.", "ran: go test ./..."},
		{"deny", "!deny", "Permission for Bash: denied by bob.", "denied: Denied by bob in chat."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(_ *Options, c *harnessConfig) { c.plain = true })
			h.say("alice", "T1", "check [[TOOL:go test ./...]]")
			prompt := h.rec.waitSend(t, "🔐 **Permission needed**: `Bash`\nCommand:\n```\ngo test ./...\n```")
			if !strings.Contains(prompt.Text, "!allow") || !strings.Contains(prompt.Text, "!deny") {
				t.Errorf("prompt = %q, want the !allow / !deny hint", prompt.Text)
			}
			h.say("bob", "T1", tt.answer)
			h.rec.waitSend(t, tt.outcome)
			h.rec.waitSend(t, tt.reply)
			// Without an editor there is no progress message.
			if got := h.rec.sends("Running:"); len(got) != 0 {
				t.Errorf("progress posted without an editor: %q", got)
			}
		})
	}
}

func TestMessageDuringPendingPermissionIsQueued(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "please [[TOOL:make]]")
	ask := waitAsk(t, h)
	h.say("alice", "T1", "yes do it")
	h.rec.waitSend(t, "Queued (position 1)")
	if got := h.rec.kinds("resolve"); len(got) != 0 {
		t.Fatalf("an ordinary message answered the prompt: %+v", got)
	}
	h.press("alice", ask.Prompt.RequestID, platform.ChoiceAllow)
	h.rec.waitSend(t, "echo: yes do it")
	var order []string
	for _, s := range h.rec.sends("") {
		if strings.HasPrefix(s, "ran: ") || strings.HasPrefix(s, "echo: ") {
			order = append(order, strings.SplitN(s, "\n", 2)[0])
		}
	}
	if strings.Join(order, "|") != "ran: make|echo: yes do it" {
		t.Errorf("replies = %q, want the tool turn first", order)
	}
}

func TestStopDuringPendingPermissionCancelsPrompt(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "please [[TOOL:make]]")
	waitAsk(t, h)
	h.say("alice", "T1", "!stop")
	h.rec.waitSend(t, "Stopped.")
	res := h.rec.kinds("resolve")
	if len(res) != 1 || res[0].Text != "cancelled" {
		t.Errorf("resolved = %+v, want the prompt cancelled", res)
	}
}

// TestPlanApprovalModeKeptByTheNextProcess: the mode a plan's approval
// leaves plan mode into is the conversation's from then on (docs/turns.md,
// "Plans"), so the process started after a restart runs in it, not in
// plan mode again: the CLI's own switch dies with its process.
func TestPlanApprovalModeKeptByTheNextProcess(t *testing.T) {
	tests := []struct {
		choice platform.Choice
		mode   string
	}{
		{platform.ChoicePlanDefault, "default"},
		{platform.ChoicePlanAcceptEdits, "acceptEdits"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			h := newHarness(t, nil)
			h.say("alice", "T1", "!mode plan")
			h.rec.waitSend(t, "Permission mode set to plan")
			h.say("alice", "T1", "make a plan [[PLAN]]")
			ask := waitAsk(t, h)
			if ask.Prompt.Tool != "ExitPlanMode" {
				t.Fatalf("prompt = %+v, want the plan's", ask.Prompt)
			}
			h.press("alice", ask.Prompt.RequestID, tt.choice)
			h.rec.waitSend(t, "plan approved")
			h.waitIdle()
			if sp := h.fa.spawnsSnapshot(); len(sp) != 1 || sp[0].PermissionMode != "plan" {
				t.Fatalf("spawns = %+v, want one in plan mode", sp)
			}

			h = h.restart()
			h.say("alice", "T1", "go on")
			h.rec.waitSend(t, "echo: go on")
			h.waitIdle()
			sp := h.fa.spawnsSnapshot()
			if got := sp[len(sp)-1].PermissionMode; got != tt.mode {
				t.Errorf("the process after the restart started in %q, want %q (the mode the approval left plan mode into)", got, tt.mode)
			}
		})
	}
}
