package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// A turn with no event from claude for stall_notice gets one notice
// naming what it was doing and how to stop it; !stop then stops it.
func TestStallNotice(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.StallNotice = 150 * time.Millisecond })
	h.say("alice", "T1", "think hard [[HANG]]")
	h.rec.waitSend(t, "No word from Claude for")
	notice := h.rec.sends("No word from Claude")[0]
	if !strings.Contains(notice, "!stop") || !strings.Contains(notice, "it was last starting") {
		t.Errorf("stall notice = %q", notice)
	}
	// One notice for one stall: the next checks find it told already.
	h.logs.WaitRecords(t, waitLimit, "Turn stalled: no event from claude", 1)
	h.say("alice", "T1", "!stop")
	h.rec.waitSend(t, "Stopped.")
	if n := len(h.rec.sends("No word from Claude")); n != 1 {
		t.Errorf("%d stall notices, want 1", n)
	}
}

// max_turn_time interrupts a turn that runs longer and says so; the
// session goes on.
func TestMaxTurnTime(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.MaxTurnTime = 200 * time.Millisecond })
	h.say("alice", "T1", "forever [[HANG]]")
	h.rec.waitSend(t, "ran longer than 200ms (max_turn_time)")
	h.rec.waitSend(t, "Stopped.")
	h.say("alice", "T1", "and now?")
	h.rec.waitSend(t, "echo: and now?")
}

// A chat without buttons gets Claude's question as a numbered list; a
// reply with a number answers it, and the real CLI hands the answer to the
// model.
func TestRealCLIQuestionAsAList(t *testing.T) {
	h, api := plainRealCLIHarness(t, nil)
	h.say("alice", "T1", "pick [[ASK]]")
	list := h.rec.waitSend(t, "Which color should the button be?")
	for _, want := range []string{"1. Red — A warm red", "2. Blue — A calm blue", "Reply with an option's number"} {
		if !strings.Contains(list.Text, want) {
			t.Errorf("the list lacks %q:\n%s", want, list.Text)
		}
	}
	h.say("bob", "T1", "2")
	h.rec.waitSend(t, "tool said:")
	found := false
	for _, r := range api.Requests() {
		for _, tr := range r.ToolResults {
			found = found || strings.Contains(tr.Content, `"Which color should the button be?"="Blue"`)
		}
	}
	if !found {
		t.Error("the model did not get the answer")
	}
	if got := h.rec.sends("answered by bob"); len(got) != 1 {
		t.Errorf("who answered is not shown: %q", h.rec.sends("Claude's question"))
	}
	// A platform without edits gets the reply once, whole, at the end.
	if n := len(h.rec.kinds("edit")); n != 0 {
		t.Errorf("%d edits on a platform without them", n)
	}
}

// plainRealCLIHarness is newRealCLIHarness on a platform without optional
// interfaces (no edits, no buttons), as the local chat is.
func plainRealCLIHarness(t *testing.T, mutate func(*Options)) (*harness, *fakeapi.Server) {
	t.Helper()
	bin := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	home := t.TempDir()
	h := newHarness(t, func(o *Options, c *harnessConfig) {
		c.real, c.plain = true, true
		o.Agent = agentproc.Config{Command: bin, CloseGrace: 10 * time.Second, Env: map[string]string{
			"HOME": home, "CLAUDE_CONFIG_DIR": home + "/.claude", "ANTHROPIC_BASE_URL": api.URL(), "ANTHROPIC_API_KEY": "test",
			"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		}}
		o.ShutdownGrace = 10 * time.Second
		if mutate != nil {
			mutate(o)
		}
	})
	return h, api
}

// An unanswered question times out like a permission request: the model
// is told nobody answered, and the turn goes on. While it waited, the
// record named it for a restart's notice.
func TestRealCLIQuestionTimesOut(t *testing.T) {
	h, api := plainRealCLIHarness(t, func(o *Options) { o.PermissionTimeout = 300 * time.Millisecond })
	h.say("alice", "T1", "pick [[ASK]]")
	h.rec.waitSend(t, "Claude's question: no answer within 300ms.")
	h.rec.waitSend(t, "tool said:")
	found := false
	for _, r := range api.Requests() {
		for _, tr := range r.ToolResults {
			found = found || (tr.IsError && strings.Contains(tr.Content, "No answer in chat within 300ms"))
		}
	}
	if !found {
		t.Error("the model was not told that nobody answered")
	}
	h.logs.WaitRecords(t, waitLimit, "Permission requested", 1)
}
