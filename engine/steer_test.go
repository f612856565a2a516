package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// steerHarness is a real-driver harness (the fake claude) whose binding
// has follow_ups = follow.
func steerHarness(t *testing.T, follow string) *harness {
	t.Helper()
	h, _ := newRealHarness(t, nil, func(o *Options) { o.Bindings[0].FollowUps = follow })
	return h
}

// countOf is how many of texts hold sub.
func countOf(texts []string, sub string) int {
	n := 0
	for _, s := range texts {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// TestSteerIntoRunningTurn: with follow_ups = "steer", a message sent
// while a turn runs goes into that turn (the CLI reads it with the tool's
// result), is marked taken in with a reaction, is not told it waits, and
// the turn ends with one reply that answers both; each reached Claude
// once and nothing is left in the journal.
func TestSteerIntoRunningTurn(t *testing.T) {
	h := steerHarness(t, binding.FollowUpsSteer)
	h.say("alice", "T1", "[[TOOL:touch x]]")
	ask := waitAsk(t, h)
	m := h.message("bob", "T1", "use the other file")
	if res := h.deliver(m); res.Status != platform.Queued {
		t.Fatalf("the follow-up: %+v", res)
	}
	h.logs.WaitRecords(t, waitLimit, "Message steered into the running turn", 1)
	h.press("alice", ask.Prompt.RequestID, platform.ChoiceAllow)
	h.rec.waitSend(t, "also read while working: use the other file")
	h.rec.waitFor(t, "the follow-up's reaction", func(calls []recorded) bool {
		for _, c := range calls {
			if c.Kind == "react" && c.To.MessageID == m.Target.MessageID && c.Text == "eyes" {
				return true
			}
		}
		return false
	})
	h.waitIdle()
	if got := claudeGot(t, h); strings.Join(got, "|") != "[[TOOL:touch x]]|use the other file" {
		t.Errorf("claude received %q, want each message once", got)
	}
	if n := countOf(h.rec.sends("tool said"), "tool said"); n != 1 {
		t.Errorf("%d replies, want one for both messages", n)
	}
	if got := h.rec.sends("Queued (position"); len(got) != 0 {
		t.Errorf("the steered message was told it waits: %q", got)
	}
	if n := h.pending(t1Key); n != 0 {
		t.Errorf("%d messages pending after the turn", n)
	}
}

// TestSteerFirstReplyAfterAStart: the first reply in a thread after a
// start carries a gap check (the thread is read back for what a dead
// instance may have taken and never journaled, checks.go); when the
// thread's turn is running, the read is made then and the reply goes into
// the turn all the same, after what the read found missing (posted before
// it): each reaches Claude once, in the thread's order, and the thread
// gets one reply for all.
func TestSteerFirstReplyAfterAStart(t *testing.T) {
	th := &threadHistory{threads: map[string][]platform.HistoryMessage{}}
	h, _ := newRealHarnessCfg(t, nil, func(o *Options, c *harnessConfig) {
		o.Bindings[0].FollowUps = binding.FollowUpsSteer
		c.adapter = func(rec *fakePlatform) platform.Adapter { return historyPlatform{richPlatform{rec}, th} }
	})
	at := func(user string, seq uint64, text string) platform.Message {
		m := h.message(user, "T1", text)
		m.Seq = seq
		return m
	}
	root := at("alice", 100, "[[TOOL:touch x]]")
	root.Target.MessageID = "T1"
	h.deliver(root)
	ask := waitAsk(t, h)
	// lost never reached this engine: what a dead instance took.
	lost, reply := at("bob", 150, "the lost one"), at("bob", 200, "use the other file")
	th.set("T1", past(root), past(lost), past(reply))
	if res := h.deliver(reply); res.Status != platform.Queued {
		t.Fatalf("the reply: %+v", res)
	}
	h.logs.WaitRecords(t, waitLimit, "Message steered into the running turn", 2)
	h.press("alice", ask.Prompt.RequestID, platform.ChoiceAllow)
	h.rec.waitSend(t, "also read while working: use the other file")
	h.waitIdle()
	if got := claudeGot(t, h); strings.Join(got, "|") != "[[TOOL:touch x]]|the lost one|use the other file" {
		t.Errorf("claude received %q, want each once in the thread's order", got)
	}
	if n := countOf(h.rec.sends("tool said"), "tool said"); n != 1 {
		t.Errorf("%d replies, want one for all", n)
	}
	if got := h.rec.sends("Queued (position"); len(got) != 0 {
		t.Errorf("the reply was told it waits: %q", got)
	}
	if n := th.readCount(); n != 1 {
		t.Errorf("%d thread reads, want one", n)
	}
	if n := h.pending(t1Key); n != 0 {
		t.Errorf("%d messages pending after the turn", n)
	}
}

// TestSteeredMessageLeftOutOfItsTurn: a message steered into a turn that
// ends before the CLI takes it in (no tool ran: Claude was writing its
// answer) is run by the CLI next, as a turn of its own; cc-connect answers
// it with that turn's reply, once, and the running turn keeps its own.
func TestSteeredMessageLeftOutOfItsTurn(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	h, _ := newRealHarness(t, map[string]string{"FAKECLAUDE_RELEASE": release}, func(o *Options) {
		o.Bindings[0].FollowUps = binding.FollowUpsSteer
	})
	h.say("alice", "T1", "[[SLOW]] first")
	h.say("bob", "T1", "use the other file")
	h.logs.WaitRecords(t, waitLimit, "Message steered into the running turn", 1)
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.rec.waitSend(t, "echo: use the other file")
	h.waitIdle()
	h.logs.WaitRecords(t, waitLimit, "A steered message was not taken into its turn; the agent runs it next", 1)
	if got := claudeGot(t, h); strings.Join(got, "|") != "[[SLOW]] first|use the other file" {
		t.Errorf("claude received %q, want each once", got)
	}
	if n := countOf(h.rec.sends("[chunk 0]"), "[chunk 0]"); n != 1 {
		t.Errorf("%d replies of the first turn, want one", n)
	}
	if n := countOf(h.rec.sends("echo: use the other file"), "echo: use the other file"); n != 1 {
		t.Errorf("%d replies to the steered message, want one", n)
	}
	if n := h.pending(t1Key); n != 0 {
		t.Errorf("%d messages pending", n)
	}
}

// TestSteeredMessageLeftOutSurvivesKill: killed right after the running
// turn's reply was posted, while the CLI answers a message left out of
// that turn by itself: after the restart that message is answered once,
// from the transcript (it was journaled as sent when the turn's result
// came), and the turn's own reply is not replaced by it.
func TestSteeredMessageLeftOutSurvivesKill(t *testing.T) {
	kp := newKillPoint(conv.PointReplied, 1)
	release := filepath.Join(t.TempDir(), "release")
	h, re := newRealHarness(t, map[string]string{"FAKECLAUDE_RELEASE": release}, func(o *Options) {
		o.Bindings[0].FollowUps = binding.FollowUpsSteer
	})
	h.stop()
	cfg := *h.cfg
	cfg.stopAt = kp.hook
	h = startHarness(t, h.opts, &cfg, h.logs)
	h.say("alice", "T1", "[[SLOW]] first")
	h.say("bob", "T1", "use the other file")
	h.logs.WaitRecords(t, waitLimit, "Message steered into the running turn", 1)
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	kp.wait(t)
	// The CLI answers the message left out by itself meanwhile.
	pollFor(t, "the CLI's answer in the transcript", func() bool {
		found := false
		_ = filepath.WalkDir(re.configDir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
				if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "echo: use the other file") {
					found = true
				}
			}
			return nil
		})
		return found
	})
	h = h.kill(t, kp)
	pollFor(t, "the journal to be settled", func() bool {
		s := h.e.convs.Lookup(t1Key)
		return s != nil && s.JournalOpen() && len(s.Pending()) == 0
	})
	h.waitIdle()
	if n := countOf(h.rec.sends("echo: use the other file"), "echo: use the other file"); n != 1 {
		t.Errorf("the message left out was answered %d times, want once:\n%s\n%s", n, dump(h.rec.snapshot()), h.logs.String())
	}
	for _, s := range h.rec.sends("[chunk 0]") {
		if strings.Contains(s, "echo: use the other file") {
			t.Errorf("the turn's reply holds the other message's answer: %q", s)
		}
	}
	if got := countOf(claudeGot(t, h), "use the other file"); got != 1 {
		t.Errorf("claude received the message %d times, want once: %q\n%s\n%s", got, claudeGot(t, h), dump(h.rec.snapshot()), h.logs.String())
	}
}

// TestSteerAndQueueCommands: on a binding that queues, !steer sends one
// message into the running turn, and a plain message (as !queue would on
// a binding that steers) waits and runs as its own turn after it.
func TestSteerAndQueueCommands(t *testing.T) {
	for _, follow := range []string{binding.FollowUpsQueue, binding.FollowUpsSteer} {
		t.Run(follow, func(t *testing.T) {
			h := steerHarness(t, follow)
			h.say("alice", "T1", "[[TOOL:touch x]]")
			ask := waitAsk(t, h)
			steer, later := "use the other file", "later one"
			if follow == binding.FollowUpsQueue {
				steer = "!steer " + steer
			} else {
				later = "!queue " + later
			}
			h.say("bob", "T1", steer)
			h.logs.WaitRecords(t, waitLimit, "Message steered into the running turn", 1)
			h.say("bob", "T1", later)
			h.rec.waitSend(t, "Queued (position 1)")
			h.press("alice", ask.Prompt.RequestID, platform.ChoiceAllow)
			h.rec.waitSend(t, "also read while working: use the other file")
			h.rec.waitSend(t, "echo: later one")
			h.waitIdle()
			if got := claudeGot(t, h); strings.Join(got, "|") != "[[TOOL:touch x]]|use the other file|later one" {
				t.Errorf("claude received %q", got)
			}
			if n := h.pending(t1Key); n != 0 {
				t.Errorf("%d messages pending", n)
			}
		})
	}
}

// TestSteerWithoutRunningTurnRunsAsTurn: !steer when no turn runs is a
// turn of its own; without a message it says how it is used.
func TestSteerWithoutRunningTurnRunsAsTurn(t *testing.T) {
	h := steerHarness(t, binding.FollowUpsQueue)
	h.say("alice", "T1", "!steer hello there")
	h.rec.waitSend(t, "echo: hello there")
	h.say("alice", "T1", "!steer")
	h.rec.waitSend(t, "Usage: !steer <message>")
	h.waitIdle()
	if got := claudeGot(t, h); strings.Join(got, "|") != "hello there" {
		t.Errorf("claude received %q", got)
	}
}

// TestSteeredMessageSurvivesKill: cc-connect is killed with a message
// steered into the running turn (journaled as steered, written to the
// CLI). After the restart it is neither lost nor answered twice: when
// the transcript holds it, it was answered with its turn and is
// acknowledged; when not, it runs as its own turn.
func TestSteeredMessageSurvivesKill(t *testing.T) {
	for _, tc := range []struct {
		name  string
		point string
	}{
		// Killed right after the write: whether the CLI took it in
		// is for the transcript to say.
		{"after the write", conv.PointSteered},
		// Killed after the reply that answers both was posted, before
		// either entry was acknowledged.
		{"after the reply", conv.PointReplied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kp := newKillPoint(tc.point, 1)
			h := killedHarness(t, kp)
			h.stop()
			cfg := *h.cfg
			opts := h.opts
			opts.Bindings = []binding.Binding{opts.Bindings[0]}
			opts.Bindings[0].FollowUps = binding.FollowUpsSteer
			h = startHarness(t, opts, &cfg, h.logs)
			h.say("alice", "T1", "[[TOOL:touch x]]")
			ask := waitAsk(t, h)
			h.say("bob", "T1", "use the other file")
			h.logs.WaitRecords(t, waitLimit, "Message steered into the running turn", 1)
			if tc.point == conv.PointReplied {
				h.press("alice", ask.Prompt.RequestID, platform.ChoiceAllow)
			}
			kp.wait(t)
			if n := len(h.e.convs.Lookup(t1Key).Pending()); n != 2 {
				t.Fatalf("%d entries pending at the kill, want the turn's and the steered one", n)
			}
			h = h.kill(t, kp)
			// The restarted engine recovers the turn's entry first, then
			// settles the steered one.
			h.logs.WaitRecords(t, waitLimit, "Recovering pending messages", 1)
			if tc.point == conv.PointSteered {
				// The permission request outlived the kill (parked.go):
				// the turn goes on once it is answered.
				h.rec.waitSend(t, "still waits for an answer")
				h.press("alice", ask.Prompt.RequestID, platform.ChoiceAllow)
			}
			pollFor(t, "the journal to be settled", func() bool {
				s := h.e.convs.Lookup(t1Key)
				return s != nil && s.JournalOpen() && len(s.Pending()) == 0
			})
			h.waitIdle()
			answers := countOf(h.rec.sends("use the other file"), "also read while working: use the other file") +
				countOf(h.rec.sends("use the other file"), "echo: use the other file")
			if tc.point == conv.PointSteered && answers != 1 {
				t.Errorf("the steered message was answered %d times after the restart, want once:\n%s\n%s", answers, dump(h.rec.snapshot()), h.logs.String())
			}
			if got := countOf(claudeGot(t, h), "use the other file"); tc.point == conv.PointReplied && got != 1 {
				t.Errorf("claude received the steered message %d times, want once (it was answered before the kill): %q", got, claudeGot(t, h))
			}
			if n := h.pending(t1Key); n != 0 {
				t.Errorf("%d messages pending after the recovery", n)
			}
		})
	}
}

// TestSteeredMessageTakenInBeforeItWasSaid: cc-connect is killed right
// after it wrote a steered message, and the CLI, which outlives it, takes
// the message into the running turn (its transcript shows it absorbed)
// before cc-connect could read command_lifecycle started: nothing in the
// journal says it was taken in. After the restart it is neither sent
// again nor left unanswered: the turn it went into answers it, whether
// that turn was cut right after it took the message in (resumed with the
// message in its history) or finished with an answer never posted.
func TestSteeredMessageTakenInBeforeItWasSaid(t *testing.T) {
	for _, tc := range []struct {
		name string
		held bool // the CLI is killed between taking it in and saying so
	}{
		{"cut after taking it in", true},
		{"answered, not posted", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kp := newKillPoint(conv.PointSteered, 1)
			gate := filepath.Join(t.TempDir(), "fold")
			env := map[string]string{}
			if tc.held {
				env["FAKECLAUDE_FOLD_GATE"] = gate // never opened: killed there
			}
			h, re := newRealHarness(t, env, func(o *Options) { o.Bindings[0].FollowUps = binding.FollowUpsSteer })
			h.stop()
			cfg := *h.cfg
			cfg.stopAt = kp.hook
			h = startHarness(t, h.opts, &cfg, h.logs)
			h.say("alice", "T1", "[[TOOL:sleep 0.2]]")
			h.say("bob", "T1", "use the other file")
			kp.wait(t) // written; cc-connect stands still from here
			mark := "(also read while working: use the other file)"
			if tc.held {
				pollFor(t, "the CLI to take the message in", func() bool { _, err := os.Stat(gate + ".held"); return err == nil })
			} else {
				pollFor(t, "the turn's answer in the transcript", func() bool { return transcriptHolds(re.configDir, mark) })
			}
			if !transcriptHolds(re.configDir, `"source_uuid"`) {
				t.Fatal("the transcript does not show the message taken in")
			}
			h = h.kill(t, kp)
			pollFor(t, "the journal to be settled", func() bool {
				s := h.e.convs.Lookup(t1Key)
				return s != nil && s.JournalOpen() && len(s.Pending()) == 0
			})
			h.waitIdle()
			if got := countOf(claudeGot(t, h), "use the other file"); got != 1 {
				t.Errorf("claude received the steered message %d times, want once: %q\n%s\n%s", got, claudeGot(t, h), dump(h.rec.snapshot()), h.logs.String())
			}
			if n := countOf(h.rec.sends("use the other file"), mark); n != 1 {
				t.Errorf("the thread got %d answers to the steered message, want one:\n%s", n, dump(h.rec.snapshot()))
			}
			if n := countOf(h.rec.sends("echo: use the other file"), "echo: use the other file"); n != 0 {
				t.Errorf("the steered message ran again as a turn of its own:\n%s", dump(h.rec.snapshot()))
			}
		})
	}
}

// transcriptHolds reports whether a transcript under the CLI's config
// folder holds sub.
func transcriptHolds(configDir, sub string) bool {
	found := false
	_ = filepath.WalkDir(configDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), sub) {
				found = true
			}
		}
		return nil
	})
	return found
}

// TestSteeredMessageNotInTranscriptRunsAsTurn: a restart finds a message
// journaled as steered into a turn whose CLI never had it (not said to be
// taken in, and the transcript does not show it taken in): after that turn
// is recovered, it is recovered as a message sent on its own, and so runs
// as a turn of its own, once.
func TestSteeredMessageNotInTranscriptRunsAsTurn(t *testing.T) {
	h, _ := newRealHarness(t, nil, nil)
	h.stop()
	stageCutTurn(t, h, conv.Record{}, "00000000-0000-4000-8000-0000000000a1", "first")
	in, err := inbox.Open(conv.InboxPath(h.opts.StateDir, t1Key), inbox.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := h.message("bob", "T1", "use the other file")
	m.Seq = 2
	if err := in.Append(inbox.Entry{ID: m.ID, Platform: "fake", Channel: "C1", Thread: "T1", MessageID: m.Target.MessageID,
		UserID: "bob", Text: m.Text, Seq: 2}); err != nil {
		t.Fatal(err)
	}
	first := in.Pending()[0].ID
	if err := in.MarkSteered(m.ID, first); err != nil {
		t.Fatal(err)
	}
	in.Close()
	h = h.restart()
	h.rec.waitSend(t, "echo: first")
	h.rec.waitSend(t, "echo: use the other file")
	h.logs.WaitRecords(t, waitLimit, "A steered message the transcript does not show taken into its turn is recovered as sent on its own", 1)
	h.waitIdle()
	if got := claudeGot(t, h); strings.Join(got, "|") != "first|use the other file" {
		t.Errorf("claude received %q, want each once", got)
	}
	if n := h.pending(t1Key); n != 0 {
		t.Errorf("%d messages pending", n)
	}
}

// unreadableTranscripts are the engine's transcripts, whose reads fail
// while broken says so: what a transcript that cannot be read gives.
type unreadableTranscripts struct {
	procs.Transcripts
	broken func(read string) bool
}

var errUnreadable = errors.New("read: input/output error")

func (u unreadableTranscripts) Contains(path, id string) (bool, error) {
	if u.broken("contains") {
		return false, errUnreadable
	}
	return u.Transcripts.Contains(path, id)
}

func (u unreadableTranscripts) Absorbed(path, id string) (bool, error) {
	if u.broken("absorbed") {
		return false, errUnreadable
	}
	return u.Transcripts.Absorbed(path, id)
}

func (u unreadableTranscripts) End(path string) (agentproc.Interruption, error) {
	if u.broken("end") {
		return agentproc.InterruptionNone, errUnreadable
	}
	return u.Transcripts.End(path)
}

func (u unreadableTranscripts) ReplyAfter(path, id string) (string, error) {
	if u.broken("reply") {
		return "", errUnreadable
	}
	return u.Transcripts.ReplyAfter(path, id)
}

// TestSteeredMessageOfALostTurnNamed: cc-connect is killed while a turn
// runs with a follow-up steered into it, which the CLI took in; after the
// restart the turn cannot be recovered: cut there, its transcript cannot
// be read; finished there, its reply cannot be read back. The thread is
// told once that the turn is lost, naming the turn's own message and the
// follow-up taken into it, so that nobody takes the follow-up for
// handled; neither is sent to Claude again, nor left pending.
func TestSteeredMessageOfALostTurnNamed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		held   bool                   // the CLI is killed between taking it in and saying so
		broken func(read string) bool // what of the transcript cannot be read after the restart
		notice string
	}{
		{"cut_transcript_unreadable", true, func(string) bool { return true }, "could not be recovered"},
		{"answered_reply_unreadable", false, func(read string) bool { return read == "reply" }, "is lost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kp := newKillPoint(conv.PointSteered, 1)
			gate := filepath.Join(t.TempDir(), "fold")
			env := map[string]string{}
			if tc.held {
				env["FAKECLAUDE_FOLD_GATE"] = gate // never opened: killed there
			}
			var broken atomic.Bool
			h, re := newRealHarness(t, env, func(o *Options) { o.Bindings[0].FollowUps = binding.FollowUpsSteer })
			h.stop()
			cfg := *h.cfg
			cfg.stopAt = kp.hook
			cfg.transcripts = func(tx procs.Transcripts) procs.Transcripts {
				return unreadableTranscripts{Transcripts: tx, broken: func(read string) bool { return broken.Load() && tc.broken(read) }}
			}
			h = startHarness(t, h.opts, &cfg, h.logs)
			h.say("alice", "T1", "[[TOOL:sleep 0.2]] check the build")
			h.say("bob", "T1", "use the other file")
			kp.wait(t) // written; cc-connect stands still from here
			if tc.held {
				pollFor(t, "the CLI to take the message in", func() bool { _, err := os.Stat(gate + ".held"); return err == nil })
			} else {
				pollFor(t, "the turn's answer in the transcript", func() bool {
					return transcriptHolds(re.configDir, "(also read while working: use the other file)")
				})
			}
			broken.Store(true)
			h = h.kill(t, kp)
			pollFor(t, "the journal to be settled", func() bool {
				s := h.e.convs.Lookup(t1Key)
				return s != nil && s.JournalOpen() && len(s.Pending()) == 0
			})
			h.waitIdle()
			var lost []string
			for _, r := range h.rec.snapshot() {
				if r.Kind == "send" && (strings.Contains(r.Text, "check the build") || strings.Contains(r.Text, "use the other file")) {
					lost = append(lost, r.Text)
				}
			}
			if len(lost) != 1 || !strings.Contains(lost[0], tc.notice) ||
				!strings.Contains(lost[0], "check the build” and the message added to it while it ran (“use the other file”)") {
				t.Errorf("the thread was told %d times of the lost turn, want once, naming both messages:\n%s", len(lost), dump(h.rec.snapshot()))
			}
			for _, text := range []string{"check the build", "use the other file"} {
				if n := countOf(claudeGot(t, h), text); n != 1 {
					t.Errorf("claude received %q %d times, want once (before the kill): %q", text, n, claudeGot(t, h))
				}
			}
		})
	}
}
