package engine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

// Rights taken away by a reload apply to the very next command of a
// conversation that is already running, not from its next session: the
// process is not restarted, and still the command is refused.
func TestRightsTakenAwayApplyToTheNextCommand(t *testing.T) {
	tests := []struct {
		name   string
		change func(b *binding.Binding)
		refuse string
	}{
		{"admin removed", func(b *binding.Binding) { b.Admins = nil }, render.ShellNotAdminText},
		{"allow_shell turned off", func(b *binding.Binding) { b.AllowShell = false }, render.ShellOffText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := shellHarness(t, nil)
			h.say("alice", "T1", "hello")
			h.rec.waitSend(t, "echo: hello")
			h.say("alice", "T1", "!sh echo first")
			h.rec.waitSend(t, "first")
			h.waitIdle()
			h.reload(Reload{Bindings: h.bindingsWith(func(bs []binding.Binding) []binding.Binding {
				tt.change(&bs[0])
				return bs
			})})
			h.say("alice", "T1", "!sh touch second.txt")
			h.rec.waitSend(t, tt.refuse)
			h.waitIdle()
			if _, err := os.Stat(filepath.Join(h.ws, "second.txt")); err == nil {
				t.Error("the command ran after the right was taken away")
			}
			if !h.e.sessionLive(t, "fake/C1/T1") || len(h.fa.spawnsSnapshot()) != 1 {
				t.Error("the conversation was restarted: the change must apply without a new session")
			}
		})
	}
}

// An approver taken off the list cannot answer a prompt that was posted
// while they still could.
func TestApproverRemovedWhilePromptPending(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "please [[TOOL:make deploy]]")
	ask := waitAsk(t, h)
	h.reload(Reload{Bindings: h.bindingsWith(func(bs []binding.Binding) []binding.Binding {
		bs[0].Approvers = []string{"bob"}
		return bs
	})})
	h.press("alice", ask.Prompt.RequestID, platform.ChoiceAllow)
	h.rec.waitSend(t, "alice is not allowed to answer permission requests here.")
	if got := h.rec.kinds("resolve"); len(got) != 0 {
		t.Fatalf("the removed approver answered: %+v", got)
	}
	h.press("bob", ask.Prompt.RequestID, platform.ChoiceAllow)
	h.rec.waitSend(t, "ran: make deploy")
}

// A user taken off the allow list is not heard from the next message on,
// and what they queued before is not passed to Claude either.
func TestAllowListTakenAwayDropsQueuedMessages(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "long job [[WAIT]]")
	h.fa.waitFor(t, "the turn to start", func(fa *fakeAgents) bool { return len(fa.spawns) == 1 })
	h.say("bob", "T1", "queued by bob")
	h.rec.waitSend(t, "Queued (position 1)")
	h.reload(Reload{Bindings: h.bindingsWith(func(bs []binding.Binding) []binding.Binding {
		bs[0].AllowUsers = slices.DeleteFunc(bs[0].AllowUsers, func(u string) bool { return u == "bob" })
		return bs
	})})
	h.say("bob", "T1", "after the change")
	h.rec.waitSend(t, refusalText)
	h.fa.release(t)
	h.rec.waitSend(t, "A message from bob was not passed to Claude: they are no longer allowed here.")
	h.waitIdle()
	for _, text := range h.fa.history("sess-1") {
		if text == "queued by bob" || text == "after the change" {
			t.Errorf("Claude received %q from a user no longer allowed", text)
		}
	}
	if got := h.rec.sends("echo: queued by bob"); len(got) != 0 {
		t.Errorf("the queued message was answered: %q", got)
	}
}
