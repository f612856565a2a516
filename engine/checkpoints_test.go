package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/platform"
)

// What a turn changed, end to end with the fake claude (which checkpoints
// [[WRITE]]s and answers rewind_files as the real CLI does,
// captures/checkpoints): the summary with its Revert button, !diff as a
// file, the button and !revert for approvers only, and the refusals.

// newCheckpointHarness runs the fake claude (checkpoints on: the binding's
// default, unless off) behind a platform that takes files; bob may use the
// agent but not approve.
func newCheckpointHarness(t *testing.T, off ...bool) (*harness, *teamPlatform, realEnv) {
	t.Helper()
	bin := fakeclaude.Build(t)
	home := t.TempDir()
	re := realEnv{record: filepath.Join(home, "record.jsonl"), configDir: filepath.Join(home, ".claude")}
	tp := &teamPlatform{maxFile: 1 << 20}
	h := newHarness(t, func(o *Options, c *harnessConfig) {
		c.real = true
		o.Agent = agentproc.Config{Command: bin, CloseGrace: 2 * time.Second,
			Env: map[string]string{"HOME": home, "CLAUDE_CONFIG_DIR": re.configDir, "FAKECLAUDE_RECORD": re.record}}
		o.Bindings[0].Approvers = []string{"alice"}
		if len(off) > 0 && off[0] {
			no := false
			o.Bindings[0].Setup.Checkpoints = &no
		}
		c.adapter = func(f *fakePlatform) platform.Adapter {
			tp.richPlatform = richPlatform{f}
			return tp
		}
	})
	return h, tp, re
}

// waitSummary waits for the n-th turn summary posted with a Revert button.
func waitSummary(t *testing.T, h *harness, n int) recorded {
	t.Helper()
	var got []recorded
	h.rec.waitFor(t, "turn summary", func(calls []recorded) bool {
		got = got[:0]
		for _, c := range calls {
			if c.Kind == "ask" && strings.HasPrefix(c.Prompt.RequestID, "revert:") {
				got = append(got, c)
			}
		}
		return len(got) >= n
	})
	return got[n-1]
}

// press presses the Revert button of summary as user.
func press(t *testing.T, h *harness, summary recorded, user string) {
	t.Helper()
	posted := summary.To
	posted.MessageID = "posted-summary"
	act := platform.Action{ID: "press-" + user + "-" + summary.Prompt.RequestID, Target: posted, UserID: user, UserName: user,
		RequestID: summary.Prompt.RequestID, Choice: summary.Prompt.Choices[0].Choice}
	if err := h.e.HandleAction(context.Background(), act); err != nil {
		t.Fatalf("HandleAction: %v", err)
	}
}

func TestTurnChangesSummaryDiffAndRevert(t *testing.T) {
	h, tp, re := newCheckpointHarness(t)
	file := filepath.Join(h.ws, "new.txt")
	h.say("alice", "T1", "[[WRITE:new.txt:a\nb\nc]]")
	sum := waitSummary(t, h, 1)
	if !strings.Contains(sum.Prompt.Text, "1 file (+3 −0)") || !strings.Contains(sum.Prompt.Text, "`new.txt`") ||
		len(sum.Prompt.Choices) != 1 || sum.Prompt.Choices[0].Choice != platform.ChoiceRevert {
		t.Errorf("summary %+v", sum.Prompt)
	}
	h.waitIdle()

	h.say("bob", "T1", "!diff") // anyone may read the diff
	h.rec.waitFor(t, "the diff file", func(calls []recorded) bool { return len(tp.kinds("file")) == 1 })
	tp.mu.Lock()
	f := tp.files[0]
	tp.mu.Unlock()
	if want := "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n"; string(f.Data) != want || !strings.HasSuffix(f.Name, ".diff") {
		t.Errorf("diff file %s = %q, want %q", f.Name, f.Data, want)
	}

	press(t, h, sum, "bob")
	h.rec.waitSend(t, render.RevertNotApprover("bob"))
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("a refused press touched the file: %v", err)
	}

	press(t, h, sum, "alice")
	h.rec.waitSend(t, "alice reverted the last turn: `new.txt`")
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("new.txt after the revert: %v, want it gone", err)
	}
	if got := h.rec.kinds("resolve"); len(got) != 1 || got[0].Text != render.RevertedOutcome("alice") {
		t.Errorf("the summary's button after the revert: %+v", got)
	}

	h.say("alice", "T1", "!revert")
	h.rec.waitSend(t, "already reverted (by alice")

	// Claude hears of it with the next message.
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: ")
	h.waitIdle()
	lines := readRecord(t, re.record)
	if last := lines[len(lines)-1].Text; !strings.Contains(last, "reverted the file changes of your last turn") || !strings.Contains(last, "new.txt") {
		t.Errorf("the next prompt %q, want the revert told to Claude", last)
	}
}

func TestTurnRevertRefusals(t *testing.T) {
	h, _, _ := newCheckpointHarness(t)
	h.say("alice", "T1", "!revert")
	h.rec.waitSend(t, render.RevertNothing)

	h.say("alice", "T1", "[[WRITE:a.txt:one]]")
	first := waitSummary(t, h, 1)
	h.say("alice", "T1", "[[WRITE:b.txt:two]]")
	waitSummary(t, h, 2)
	h.waitIdle()
	press(t, h, first, "alice")
	h.rec.waitSend(t, render.RevertNotLast)
	for _, name := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(h.ws, name)); err != nil {
			t.Errorf("%s after a refused revert: %v", name, err)
		}
	}

	h.say("alice", "T1", "just talk")
	h.rec.waitSend(t, "echo: just talk")
	h.waitIdle()
	h.say("alice", "T1", "!revert")
	h.rec.waitSend(t, render.RevertNoFiles)
	h.say("alice", "T1", "!diff")
	h.rec.waitSend(t, render.DiffNothing)
	if got := h.rec.kinds("ask"); len(got) != 2 {
		t.Errorf("%d summaries, want 2 (a turn without changes posts none)", len(got))
	}
}

// TestTurnRevertWhileRunning: !revert while a turn runs is refused; the
// stopped turn is the last one then, and it changed nothing.
func TestTurnRevertWhileRunning(t *testing.T) {
	h, _, _ := newCheckpointHarness(t)
	h.say("alice", "T1", "[[WRITE:a.txt:one]]")
	waitSummary(t, h, 1)
	h.waitIdle()
	h.say("alice", "T1", "wait [[HANG]]")
	pollFor(t, "the turn to run", func() bool {
		s := h.e.convs.Lookup(t1Key)
		return s != nil && s.State() == "running"
	})
	h.say("alice", "T1", "!revert")
	h.rec.waitSend(t, render.RevertBusy)
	h.say("alice", "T1", "!stop")
	h.rec.waitSend(t, "Stopped.")
	h.waitIdle()
	h.say("alice", "T1", "!revert")
	h.rec.waitSend(t, render.RevertNoFiles)
	if _, err := os.Stat(filepath.Join(h.ws, "a.txt")); err != nil {
		t.Errorf("a.txt: %v", err)
	}
}

// TestTurnChangesOff: with checkpoints = false a turn's writes get no
// summary and !revert says why.
func TestTurnChangesOff(t *testing.T) {
	h, _, _ := newCheckpointHarness(t, true)
	h.say("alice", "T1", "[[WRITE:a.txt:one]]")
	h.rec.waitSend(t, "echo: ")
	h.waitIdle()
	h.say("alice", "T1", "!revert")
	h.rec.waitSend(t, render.RevertOff)
	if got := h.rec.kinds("ask"); len(got) != 0 {
		t.Errorf("summaries %+v, want none with checkpoints off", got)
	}
}

// TestTurnChangesPlainChat: on a chat without buttons or files (the
// terminal's case) the summary says to type !revert, !diff posts the diff
// as text, and !revert restores the file.
func TestTurnChangesPlainChat(t *testing.T) {
	bin := fakeclaude.Build(t)
	home := t.TempDir()
	h := newHarness(t, func(o *Options, c *harnessConfig) {
		c.real, c.plain = true, true
		o.Agent = agentproc.Config{Command: bin, CloseGrace: 2 * time.Second,
			Env: map[string]string{"HOME": home, "CLAUDE_CONFIG_DIR": filepath.Join(home, ".claude")}}
	})
	h.say("alice", "T1", "[[WRITE:notes.md:x\ny]]")
	sum := h.rec.waitSend(t, "This turn changed 1 file (+2 −0): `notes.md`")
	if !strings.Contains(sum.Text, "undo it with `!revert`") || strings.Contains(sum.Text, "button") {
		t.Errorf("summary without buttons %q", sum.Text)
	}
	h.waitIdle()
	h.say("bob", "T1", "!diff")
	d := h.rec.waitSend(t, "```diff")
	if !strings.Contains(d.Text, "+++ b/notes.md\n@@ -0,0 +1,2 @@\n+x\n+y\n") {
		t.Errorf("the diff as text %q", d.Text)
	}
	h.say("alice", "T1", "!revert")
	h.rec.waitSend(t, "alice reverted the last turn: `notes.md`")
	if _, err := os.Stat(filepath.Join(h.ws, "notes.md")); !os.IsNotExist(err) {
		t.Errorf("notes.md after the revert: %v", err)
	}
}
