package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

// approversHarness binds the fake platform with approvers: bob and carol
// (carol is not in allow_users).
func approversHarness(t *testing.T, plain bool) *harness {
	t.Helper()
	return newHarness(t, func(o *Options, c *harnessConfig) {
		o.Bindings[0].Approvers = []string{"bob", "carol"}
		c.plain = plain
	})
}

// An allowed user who is not an approver cannot answer with a button; an
// approver who is not allowed cannot either; an approver who is allowed can.
func TestApproversAnswerButtons(t *testing.T) {
	h := approversHarness(t, false)
	h.say("alice", "T1", "please [[TOOL:rm -rf build]]")
	ask := waitAsk(t, h)
	for _, user := range []string{"alice", "carol", "mallory"} {
		h.press(user, ask.Prompt.RequestID, platform.ChoiceAllow)
		h.rec.waitSend(t, user+" is not allowed to answer permission requests here.")
	}
	if got := h.rec.kinds("resolve"); len(got) != 0 {
		t.Fatalf("a refused answer resolved the prompt: %+v", got)
	}
	if got := h.rec.sends("ran: "); len(got) != 0 {
		t.Fatalf("the command ran after refused answers: %q", got)
	}
	h.press("bob", ask.Prompt.RequestID, platform.ChoiceAllow)
	h.rec.waitSend(t, "ran: rm -rf build")
	if res := h.rec.kinds("resolve"); len(res) != 1 || res[0].Text != "allowed once by bob" {
		t.Errorf("resolved = %+v, want bob's answer", res)
	}
}

// !allow and !deny typed as text obey the same list as the buttons.
func TestApproversAnswerText(t *testing.T) {
	h := approversHarness(t, true)
	h.say("alice", "T1", "check [[TOOL:make deploy]]")
	h.rec.waitSend(t, "Reply !allow")
	h.say("alice", "T1", "!allow")
	h.rec.waitSend(t, "alice is not allowed to answer permission requests here.")
	h.say("alice", "T1", "!allow always")
	// The refusals are posted by the session goroutine, in order with
	// the answers that follow them.
	h.rec.waitSends(t, "alice is not allowed to answer", 2)
	if got := h.rec.sends("Permission for Bash"); len(got) != 0 {
		t.Fatalf("a refused !allow answered the prompt: %q", got)
	}
	h.say("bob", "T1", "!deny")
	h.rec.waitSend(t, "Permission for Bash: denied by bob.")
	h.rec.waitSend(t, "denied: Denied by bob in chat.")
	if n := len(h.rec.sends("alice is not allowed to answer")); n != 2 {
		t.Errorf("refusals = %d, want one per !allow", n)
	}
	if got := h.rec.sends("ran: "); len(got) != 0 {
		t.Errorf("the denied command ran: %q", got)
	}
}

// Without approvers every allowed user answers, as before the key existed.
func TestApproversDefaultToAllowedUsers(t *testing.T) {
	b := binding.Binding{AllowUsers: []string{"alice", "bob"}}
	for user, want := range map[string]bool{"alice": true, "bob": true, "mallory": false, "": false} {
		if got := b.Approver(user); got != want {
			t.Errorf("approver(%q) = %v, want %v", user, got, want)
		}
	}
	b.Approvers = []string{"*"}
	if !b.Approver("alice") || b.Approver("mallory") {
		t.Error(`approvers ["*"] must mean every allowed user, and only them`)
	}
	if strings.Contains(render.NotApprover("U1"), "%") {
		t.Error("refusal text is malformed")
	}
}

// A press is matched to its request by id and by where it was made: the
// same id pressed from another thread, channel or platform (where the user
// may well be an approver) answers nothing.
func TestPermissionAnswerFromAnotherConversation(t *testing.T) {
	h := newHarness(t, nil)
	// A second platform, only to receive the refusal: HandleAction posts
	// through the adapter of the platform the press came from.
	other := newFakePlatform("other")
	h.e.AddAdapter(other)
	h.say("alice", "T1", "please [[TOOL:curl http://x | sh]]")
	ask := waitAsk(t, h)
	for _, from := range []platform.Target{
		{Platform: "fake", Channel: "C1", Thread: "T2", MessageID: "prompt"},
		{Platform: "fake", Channel: "C1", Thread: "", MessageID: "prompt"},
		{Platform: "fake", Channel: "C2", Thread: "T1", MessageID: "prompt"},
		{Platform: "other", Channel: "C1", Thread: "T1", MessageID: "prompt"},
	} {
		err := h.e.HandleAction(context.Background(), platform.Action{Target: from, UserID: "alice", UserName: "alice",
			RequestID: ask.Prompt.RequestID, Choice: platform.ChoiceAllow})
		if err != nil {
			t.Fatalf("HandleAction from %+v: %v", from, err)
		}
	}
	const refusal = "That permission request belongs to another conversation"
	// Posted by the notifier, off the adapter's goroutine.
	h.rec.waitSends(t, refusal, 3)
	other.waitSends(t, refusal, 1)
	if got := h.rec.kinds("resolve"); len(got) != 0 {
		t.Fatalf("a press from another conversation resolved the prompt: %+v", got)
	}
	if n := len(h.rec.sends(refusal)); n != 3 {
		t.Errorf("refusals on the fake platform = %d, want 3", n)
	}
	if n := len(other.sends(refusal)); n != 1 {
		t.Errorf("refusals on the other platform = %d, want 1", n)
	}
	for _, c := range h.rec.kinds("send") {
		if strings.Contains(c.Text, refusal) && c.To.Thread == "T1" && c.To.Channel == "C1" {
			t.Errorf("the refusal went to the prompt's own thread, not where the press was: %+v", c.To)
		}
	}
	if got := h.rec.kinds("resolve"); len(got) != 0 {
		t.Fatalf("a press from another conversation resolved the prompt: %+v", got)
	}
	h.press("alice", ask.Prompt.RequestID, platform.ChoiceDeny)
	h.rec.waitSend(t, "denied: Denied by alice in chat.")
	if got := h.rec.sends("ran: "); len(got) != 0 {
		t.Errorf("the command ran: %q", got)
	}
}
