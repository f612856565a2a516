package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// sayAt delivers alice's text in T1 with the platform's order seq (0: the
// platform gives none).
func (h *harness) sayAt(seq uint64, text string) platform.Result {
	h.t.Helper()
	m := h.message("alice", "T1", text)
	m.Seq = seq
	return h.deliver(m)
}

// waitWaiting waits until n [[WAIT]] turns are held by the fake agent.
func waitWaiting(t *testing.T, fa *fakeAgents, n int) {
	t.Helper()
	fa.waitFor(t, "a turn waiting", func(fa *fakeAgents) bool { return fa.waiting == n })
}

// TestWaitingMessagesRunInPlatformOrder: messages that wait behind a
// running turn run in the platform's order, whatever order they came in
// (a retry after a restart comes after messages posted later); one
// without an order keeps its place, and nothing moves ahead of it.
func TestWaitingMessagesRunInPlatformOrder(t *testing.T) {
	type msg struct {
		seq  uint64
		text string
	}
	for _, tc := range []struct {
		name      string
		delivered []msg
		want      []string
	}{
		{"in order", []msg{{20, "A"}, {30, "B"}}, []string{"A", "B"}},
		{"the earlier second", []msg{{30, "B"}, {20, "A"}}, []string{"A", "B"}},
		{"reversed", []msg{{40, "C"}, {30, "B"}, {20, "A"}}, []string{"A", "B", "C"}},
		{"one in between", []msg{{20, "A"}, {40, "C"}, {30, "B"}}, []string{"A", "B", "C"}},
		{"a message without an order is a barrier", []msg{{30, "B"}, {0, "X"}, {20, "A"}, {40, "C"}}, []string{"B", "X", "A", "C"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.sayAt(10, "first [[WAIT]]")
			waitWaiting(t, h.fa, 1)
			for _, m := range tc.delivered {
				if res := h.sayAt(m.seq, m.text); res.Status != platform.Queued {
					t.Fatalf("%s: %+v, want queued", m.text, res)
				}
			}
			h.fa.release(t)
			h.waitIdle()
			want := append([]string{"first [[WAIT]]"}, tc.want...)
			if got := h.fa.history(sess1); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("the agent got %q, want %q", got, want)
			}
			if got := h.rec.sends("reached cc-connect after a later message"); len(got) != 0 {
				t.Errorf("late notices for messages that were all waiting: %q", got)
			}
		})
	}
}

// TestQueuedPositionIsThePlatformOrders: the position a waiting message is
// told is where it runs, not where it came.
func TestQueuedPositionIsThePlatformOrders(t *testing.T) {
	h := newHarness(t, nil)
	h.sayAt(10, "first [[WAIT]]")
	waitWaiting(t, h.fa, 1)
	h.sayAt(30, "B")
	if res := h.sayAt(20, "A"); res.Position != 1 {
		t.Errorf("A queued at %d, want 1 (before B)", res.Position)
	}
	h.rec.waitSends(t, "Queued (position 1)", 2)
	h.fa.release(t)
	h.waitIdle()
}

// TestLateMessageRunsNextAndIsTold: a message that arrives after a later
// one started cannot go back in time. It runs next, before the later
// messages still waiting, and its sender is told why its answer comes
// after that one's; once nothing runs, it runs at once, with the same
// word.
func TestLateMessageRunsNextAndIsTold(t *testing.T) {
	h := newHarness(t, nil)
	h.sayAt(30, "B [[WAIT]]")
	waitWaiting(t, h.fa, 1)
	h.sayAt(40, "C")
	if res := h.sayAt(20, "A"); res.Position != 1 {
		t.Errorf("the late A queued at %d, want 1 (next)", res.Position)
	}
	h.rec.waitSend(t, "after a later message of this conversation had started, so it is answered after that one. Queued (position 1)")
	h.fa.release(t)
	h.waitIdle()
	// B is over; a message posted before it is late, and runs now.
	h.sayAt(25, "A2")
	h.rec.waitSend(t, "echo: A2")
	h.waitIdle()
	if got, want := h.fa.history(sess1), []string{"B [[WAIT]]", "A", "C", "A2"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the agent got %q, want %q", got, want)
	}
	if got := h.rec.sends("reached cc-connect after a later message"); len(got) != 2 || !strings.HasSuffix(got[1], "It runs now.") {
		t.Errorf("late notices = %q, want one for A and one for A2 saying it runs now", got)
	}
	if got := h.rec.sends("Queued (position"); len(got) != 2 {
		t.Errorf("queue notices = %q, want C's and A's (in its late notice)", got)
	}
}

// TestRecoveryRunsInPlatformOrder: after a restart the journal's pending
// messages run in the platform's order, not the order they were journaled
// in; one that was started runs first (recovery looks at it), the
// messages posted before it are told they are answered after it, and the
// order the journal keeps is the platform's after a reopen too.
func TestRecoveryRunsInPlatformOrder(t *testing.T) {
	type entry struct {
		seq     uint64
		text    string
		started bool
	}
	for _, tc := range []struct {
		name    string
		journal []entry
		want    []string
		late    []string // told they are answered after the started one
	}{
		{"journaled in reverse", []entry{{30, "C", false}, {20, "B", false}, {10, "A", false}}, []string{"A", "B", "C"}, nil},
		{"a retry journaled last", []entry{{20, "B", false}, {30, "C", false}, {10, "A", false}}, []string{"A", "B", "C"}, nil},
		{"the started one first", []entry{{30, "C", true}, {20, "B", false}, {10, "A", false}}, []string{"C", "A", "B"}, []string{"A", "B"}},
		{"after the started one", []entry{{10, "A", true}, {20, "B", false}}, []string{"A", "B"}, nil},
		{"without an order, in the journal's", []entry{{0, "B", false}, {0, "A", false}}, []string{"B", "A"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.stop()
			in, err := inbox.Open(conv.InboxPath(h.opts.StateDir, t1Key), inbox.Limits{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, en := range tc.journal {
				m := h.message("alice", "T1", en.text)
				if err := in.Append(inbox.Entry{ID: m.ID, Platform: "fake", Channel: "C1", Thread: "T1", MessageID: m.Target.MessageID,
					UserID: "alice", Text: en.text, Seq: en.seq}); err != nil {
					t.Fatal(err)
				}
				if en.started {
					if err := in.MarkStarted(m.ID, ""); err != nil {
						t.Fatal(err)
					}
				}
			}
			in.Close()
			h = h.restart()
			h.rec.waitSend(t, "echo: "+tc.want[len(tc.want)-1])
			h.waitIdle()
			if got := h.fa.history(sess1); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("the agent got %q, want %q", got, tc.want)
			}
			// A message posted before the started one came late to the
			// instance that was killed, whose notice a kill may have lost.
			got := h.rec.sends("reached cc-connect after a later message")
			var told []string
			for _, text := range got {
				if i := strings.Index(text, "”"); strings.HasPrefix(text, "“") && i > 0 {
					told = append(told, text[len("“"):i])
				}
			}
			if strings.Join(told, "|") != strings.Join(tc.late, "|") {
				t.Errorf("late notices on recovery: %q, want for %q", got, tc.late)
			}
		})
	}
}

// threadHistory is what a HistoryReader platform shows of each thread,
// kept across restarts, and how often it was read.
type threadHistory struct {
	mu      sync.Mutex
	threads map[string][]platform.HistoryMessage
	reads   int
}

func (th *threadHistory) set(thread string, hist ...platform.HistoryMessage) {
	th.mu.Lock()
	defer th.mu.Unlock()
	th.threads[thread] = hist
}

func (th *threadHistory) readCount() int {
	th.mu.Lock()
	defer th.mu.Unlock()
	return th.reads
}

// historyPlatform is a rich fake platform that reads threads back.
type historyPlatform struct {
	richPlatform
	th *threadHistory
}

var _ platform.HistoryReader = historyPlatform{}

func (p historyPlatform) History(_ context.Context, conv platform.Target, q platform.HistoryQuery) ([]platform.HistoryMessage, error) {
	p.th.mu.Lock()
	defer p.th.mu.Unlock()
	p.th.reads++
	hist := p.th.threads[conv.Thread]
	return hist[max(0, len(hist)-q.Limit):], nil
}

// past is what a HistoryReader shows of a message that reached the engine.
func past(m platform.Message) platform.HistoryMessage {
	return platform.HistoryMessage{ID: m.ID, MessageID: m.Target.MessageID, UserID: m.UserID, UserName: m.UserName,
		Text: m.Text, Seq: m.Seq, Root: m.Target.Thread == m.Target.MessageID}
}

// TestMissingBeforeTheFirstMessageAfterAStart: the messages a dead
// instance took and never journaled are read back when the first message
// of their thread reaches the new one, and run first, oldest first; the
// thread's last message the engine took is the anchor, and without one
// nothing is read back. Files and users who may not use the agent are
// left to their retries; a retry of a message read back is a duplicate;
// a thread is read once; past the window after the start, never.
func TestMissingBeforeTheFirstMessageAfterAStart(t *testing.T) {
	th := &threadHistory{threads: map[string][]platform.HistoryMessage{}}
	h := newHarness(t, func(o *Options, c *harnessConfig) {
		c.adapter = func(rec *fakePlatform) platform.Adapter { return historyPlatform{richPlatform{rec}, th} }
	})
	at := func(user, thread string, seq uint64, text string) platform.Message {
		m := h.message(user, thread, text)
		m.Seq = seq
		if seq == 100 {
			m.Target.MessageID = thread // the thread's root
		}
		return m
	}
	root, root2 := at("alice", "T1", 100, "the root"), at("alice", "T2", 100, "another root")
	h.deliver(root)
	h.rec.waitSend(t, "echo: the root") // T1's session is sess1, T2's sess2
	h.deliver(root2)
	h.rec.waitSend(t, "echo: another root")
	h.waitIdle()
	h = h.restart()

	// What the dead instance took: first, then a file, a stranger's
	// message, then second; none journaled.
	first, second := at("alice", "T1", 200, "first"), at("bob", "T1", 300, "second")
	withFile := past(at("alice", "T1", 250, "a file"))
	withFile.Files = []string{"notes.txt"}
	stranger := past(at("mallory", "T1", 260, "let me in"))
	bot := platform.HistoryMessage{ID: "bot-1", MessageID: "bot-1", Text: "echo: the root", IsBot: true, FromSelf: true, Seq: 150}
	th.set("T1", past(root), bot, past(first), withFile, stranger, past(second))
	// T2's window holds no message the engine took: no anchor.
	th.set("T2", past(at("bob", "T2", 210, "chatter")))

	h.deliver(at("alice", "T1", 400, "third"))
	h.rec.waitSend(t, "echo: third")
	h.waitIdle()
	if got, want := h.fa.history(sess1), []string{"the root", "first", "second", "third"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("T1's agent got %q, want %q", got, want)
	}
	if res := h.deliver(first); res.Status != platform.Duplicate {
		t.Errorf("the retry of a message read back: %+v, want a duplicate", res)
	}
	h.deliver(at("alice", "T1", 500, "fourth"))
	h.deliver(at("alice", "T2", 400, "in T2"))
	h.rec.waitSend(t, "echo: in T2")
	h.waitIdle()
	if got, want := h.fa.history(sess2), []string{"another root", "in T2"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("T2's agent got %q, want %q (nothing read back without an anchor)", got, want)
	}
	if n := th.readCount(); n != 2 {
		t.Errorf("%d thread reads, want one per thread", n)
	}

	h = h.restart()
	h.e.convs.SetTestHooks(conv.TestHooks{Born: time.Now().Add(-time.Hour)}) // past the window
	th.set("T1", past(root), past(at("alice", "T1", 600, "missing")))
	h.deliver(at("alice", "T1", 700, "late in the day"))
	h.rec.waitSend(t, "echo: late in the day")
	h.waitIdle()
	if n := th.readCount(); n != 2 {
		t.Errorf("%d thread reads, want none more past the window", n)
	}
	if got := h.rec.sends("echo: missing"); len(got) != 0 {
		t.Errorf("read back past the window: %q", got)
	}
}

// TestLateNoticeLostToAKillIsToldAfterTheRestart: a message comes late (a
// later one of its thread was taken and journaled as started) and is
// journaled and acknowledged, and cc-connect is killed before its late
// notice, which waits for the running turn's loop, is posted. The restart
// runs the started one first, as it must (it may have reached Claude), and
// then the late one; its sender is told why it is answered second, as the
// killed instance would have told them.
func TestLateNoticeLostToAKillIsToldAfterTheRestart(t *testing.T) {
	kp := newKillPoint(conv.PointStarted, 2)
	h := killedHarness(t, kp)
	h.sayAt(10, "first")
	h.rec.waitSend(t, "echo: first")
	h.waitIdle()
	h.sayAt(30, "later")
	kp.wait(t) // its start journaled, its turn not yet written
	if res := h.sayAt(20, "earlier"); res.Status != platform.Queued {
		t.Fatalf("the late message: %+v, want queued", res)
	}
	h = h.kill(t, kp)
	h.rec.waitSend(t, "“earlier” reached cc-connect after a later message of this conversation had started")
	h.rec.waitSend(t, "echo: earlier")
	h.waitIdle()
	// (The killed engine is not dead: what it does after its kill point
	// reaches the fake claude, not the restarted engine's chat.)
	if got := h.rec.sends("echo: "); len(got) != 2 || !strings.HasPrefix(got[0], "echo: later") || !strings.HasPrefix(got[1], "echo: earlier") {
		t.Errorf("the restarted engine answered %q, want later's answer, then earlier's", got)
	}
	if got := h.rec.sends("reached cc-connect after a later message"); len(got) != 1 {
		t.Errorf("late notices after the restart = %q, want one", got)
	}
}

// TestLateNoticeLostToAKillAfterASteerIsToldAfterTheRestart: with
// follow-ups steered, a later message goes into the running turn (its
// entry marked steered, so started, with no 👀 until Claude Code takes it
// in), and an earlier one comes late; cc-connect is killed before the
// turn's loop posted the late notice. The restart settles the turn and
// the steered message first, then runs the late one, and says why it is
// answered after.
func TestLateNoticeLostToAKillAfterASteerIsToldAfterTheRestart(t *testing.T) {
	kp := newKillPoint(conv.PointSteered, 1)
	h := killedHarness(t, kp)
	h.stop()
	cfg := *h.cfg
	opts := h.opts
	opts.Bindings = []binding.Binding{opts.Bindings[0]}
	opts.Bindings[0].FollowUps = binding.FollowUpsSteer
	h = startHarness(t, opts, &cfg, h.logs)
	h.sayAt(10, "[[TOOL:touch x]]")
	ask := waitAsk(t, h)
	h.sayAt(30, "later")
	kp.wait(t) // written into the turn; the turn's loop stands here
	if res := h.sayAt(20, "earlier"); res.Status != platform.Queued {
		t.Fatalf("the late message: %+v, want queued", res)
	}
	h = h.kill(t, kp)
	h.rec.waitSend(t, "still waits for an answer")
	h.press("alice", ask.Prompt.RequestID, platform.ChoiceAllow)
	h.rec.waitSend(t, "“earlier” reached cc-connect after a later message of this conversation had started")
	h.rec.waitSend(t, "echo: earlier")
	h.waitIdle()
	if got := h.rec.sends("reached cc-connect after a later message"); len(got) != 1 {
		t.Errorf("late notices after the restart = %q, want one", got)
	}
	later, earlier := -1, -1
	for i, text := range h.rec.sends("") {
		switch {
		case strings.Contains(text, "(also read while working: later)") && later < 0:
			later = i
		case strings.HasPrefix(text, "echo: earlier") && earlier < 0:
			earlier = i
		}
	}
	if later < 0 || earlier < later {
		t.Errorf("later answered at %d, earlier at %d: want the turn that took later in answered first", later, earlier)
	}
}
