package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/binding"
)

// TestTurnCutBetweenItsBlocksIsResumed: cc-connect is killed while the
// CLI is between the two blocks of a message that calls a tool (its text
// "I'll run a command." written, its tool_use not yet), as the Slack kill
// soak once found a steered message recovered as sent on its own. The
// transcript then ends on that text, which is not the turn's end (the
// message's stop reason is tool_use): after the restart the turn is
// resumed, and its partial text is never posted as the message's reply.
func TestTurnCutBetweenItsBlocksIsResumed(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "block")
	h, _ := newRealHarness(t, map[string]string{"FAKECLAUDE_BLOCK_GATE": gate}, // never opened: killed there
		func(o *Options) { o.Bindings[0].FollowUps = binding.FollowUpsSteer })
	h.say("alice", "T1", "[[TOOL:sleep 0.2]]")
	pollFor(t, "the CLI to stop between the message's blocks", func() bool { _, err := os.Stat(gate + ".held"); return err == nil })

	// What SIGKILL would leave: the state as it is now, then another
	// engine on it (the CLI, its input closed, ends at the gate).
	snap := t.TempDir()
	copyTree(t, h.opts.StateDir, snap)
	h.stop()
	opts := h.opts
	opts.StateDir = snap
	cfg := *h.cfg
	nh := startHarness(t, opts, &cfg, h.logs)
	nh.ids.Store(h.ids.Load())
	h = nh

	pollFor(t, "the journal to be settled", func() bool {
		s := h.e.convs.Lookup(t1Key)
		return s != nil && s.JournalOpen() && len(s.Pending()) == 0
	})
	h.waitIdle()
	sent := h.rec.sends("")
	if n := countOf(sent, "was cut off; resuming it"); n != 1 {
		t.Errorf("%d notices that the turn is resumed, want one:\n%s\n%s", n, dump(h.rec.snapshot()), h.logs.String())
	}
	for _, s := range sent {
		if strings.TrimSpace(s) == "I'll run a command." || strings.Contains(s, "had finished the turn") {
			t.Errorf("the cut turn's partial text was taken as its reply: %q\n%s", s, dump(h.rec.snapshot()))
		}
	}
	if n := h.pending(t1Key); n != 0 {
		t.Errorf("%d messages pending after the recovery", n)
	}
}
