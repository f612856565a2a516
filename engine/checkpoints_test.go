package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/conv"
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
func newCheckpointHarness(t *testing.T, off ...bool) (*harness, *teamPlatform, realEnv, *events) {
	t.Helper()
	bin := fakeclaude.Build(t)
	home := t.TempDir()
	re := realEnv{record: filepath.Join(home, "record.jsonl"), configDir: filepath.Join(home, ".claude")}
	tp := &teamPlatform{maxFile: 1 << 20}
	rec := &events{}
	h := newHarness(t, func(o *Options, c *harnessConfig) {
		c.real = true
		o.Activity = rec
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
	return h, tp, re, rec
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
	h, tp, re, act := newCheckpointHarness(t)
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
	if got := act.of(activity.Reverted); len(got) != 2 || got[0].User != "bob" || got[0].Outcome != "refused: "+render.RevertNotApprover("bob") ||
		got[1].User != "alice" || got[1].Input != "new.txt" || got[1].Outcome != "reverted" {
		t.Errorf("reverted events %+v, want bob's refused, then alice's revert of new.txt", got)
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
	h, _, _, _ := newCheckpointHarness(t)
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
	h, _, _, _ := newCheckpointHarness(t)
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
	h, _, _, _ := newCheckpointHarness(t, true)
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

// TestTurnDiffAfterRestart: the last turn's diff is kept on disk, so !diff
// posts it after a restart of cc-connect.
func TestTurnDiffAfterRestart(t *testing.T) {
	h, tp, _, _ := newCheckpointHarness(t)
	h.say("alice", "T1", "[[WRITE:kept.txt:k]]")
	waitSummary(t, h, 1)
	h.waitIdle()
	h = h.restart()
	h.say("alice", "T1", "!diff")
	h.rec.waitFor(t, "the diff file", func([]recorded) bool { return len(tp.kinds("file")) == 1 })
	tp.mu.Lock()
	f := tp.files[len(tp.files)-1]
	tp.mu.Unlock()
	if want := "--- /dev/null\n+++ b/kept.txt\n@@ -0,0 +1,1 @@\n+k\n"; string(f.Data) != want {
		t.Errorf("the diff after a restart %q, want %q", f.Data, want)
	}
	info, err := os.Stat(conv.DiffPath(h.opts.StateDir, t1Key))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the kept diff: %v, %v; want a 0600 file", info, err)
	}
}

// TestStatusShowsLastTurnChanges: !status shows what the session's last
// turn changed and whether !revert would undo it now, with the reason it
// would give when not; a turn that changed nothing, checkpoints off and a
// new session show no changes.
func TestStatusShowsLastTurnChanges(t *testing.T) {
	type step struct{ user, text, wait string }
	write := step{"alice", "[[WRITE:a.txt:one]]", "This turn changed 1 file"}
	tests := []struct {
		name      string
		off       bool
		steps     []step
		has, lack []string
	}{
		{name: "no turn yet", lack: []string{"Last turn changed", "Revert:"}},
		{name: "a turn that wrote a file", steps: []step{write},
			has: []string{"\nLast turn changed: 1 file (+1 −0): `a.txt`\nRevert: possible (approvers: `!revert`)\n"}},
		{name: "reverted", steps: []step{write, {"alice", "!revert", "alice reverted the last turn"}},
			has: []string{"\nLast turn changed: 1 file (+1 −0): `a.txt`\nRevert: not possible. The last turn was already reverted (by alice, "}},
		{name: "a later turn that changed nothing", steps: []step{write, {"alice", "just talk", "echo: just talk"}},
			lack: []string{"Last turn changed", "Revert:"}},
		{name: "checkpoints off", off: true, steps: []step{{"alice", "[[WRITE:a.txt:one]]", "echo: "}},
			lack: []string{"Last turn changed", "Revert:"}},
		{name: "a new session since", steps: []step{write, {"alice", "!new", "Started a new session"}},
			lack: []string{"Last turn changed", "Revert:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _, _, _ := newCheckpointHarness(t, tt.off)
			for _, s := range tt.steps {
				h.say(s.user, "T1", s.text)
				h.rec.waitFor(t, fmt.Sprintf("a post containing %q", s.wait), func(calls []recorded) bool {
					for _, c := range calls {
						if strings.Contains(c.Text, s.wait) || strings.Contains(c.Prompt.Text, s.wait) {
							return true
						}
					}
					return false
				})
				h.waitIdle()
			}
			h.say("bob", "T1", "!status")
			got := h.rec.waitSend(t, "State: ").Text
			for _, want := range tt.has {
				if !strings.Contains(got, want) {
					t.Errorf("!status lacks %q:\n%s", want, got)
				}
			}
			for _, no := range tt.lack {
				if strings.Contains(got, no) {
					t.Errorf("!status holds %q:\n%s", no, got)
				}
			}
		})
	}
}
