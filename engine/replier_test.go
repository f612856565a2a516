package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/platform"
)

// fakeChat is what a platform keeps across cc-connect's restarts: the
// reply parts posted under each key (a Replier's tags) and threads' roots
// (what a HistoryReader reads back). The adapters' own tests check the
// real Slack and Discord behind these interfaces against their fakes;
// these check what the engine does with them.
type fakeChat struct {
	mu      sync.Mutex
	posted  map[string]int                     // key -> parts posted
	replies []platform.Reply                   // every SendReply, in order
	roots   map[string]platform.HistoryMessage // thread -> its root
	reads   int                                // History calls
}

func newFakeChat() *fakeChat {
	return &fakeChat{posted: map[string]int{}, roots: map[string]platform.HistoryMessage{}}
}

// chatPlatform is a rich fake platform whose replies are posted through
// SendReply, one part each, and found again by key with Again.
type chatPlatform struct {
	richPlatform
	chat *fakeChat
}

var (
	_ platform.Replier       = chatPlatform{}
	_ platform.HistoryReader = chatPlatform{}
)

func (c chatPlatform) SendReply(ctx context.Context, to platform.Target, text string, r platform.Reply) (platform.ReplyResult, error) {
	c.chat.mu.Lock()
	c.chat.replies = append(c.chat.replies, r)
	found := r.Again && c.chat.posted[r.Key] > 0
	c.chat.mu.Unlock()
	if found {
		return platform.ReplyResult{Last: to, Parts: 1, Found: 1}, nil
	}
	last, err := c.Send(ctx, to, text)
	if err != nil {
		return platform.ReplyResult{Parts: 1}, err
	}
	c.chat.mu.Lock()
	c.chat.posted[r.Key]++
	c.chat.mu.Unlock()
	return platform.ReplyResult{Last: last, Parts: 1, Posted: 1}, nil
}

func (c chatPlatform) History(ctx context.Context, conv platform.Target, q platform.HistoryQuery) ([]platform.HistoryMessage, error) {
	c.chat.mu.Lock()
	defer c.chat.mu.Unlock()
	c.chat.reads++
	if r, ok := c.chat.roots[conv.Thread]; ok && q.Limit > 0 {
		return []platform.HistoryMessage{r}, nil
	}
	return nil, nil
}

func (c *fakeChat) snapshot() (replies []platform.Reply, posted map[string]int, reads int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	posted = map[string]int{}
	for k, v := range c.posted {
		posted[k] = v
	}
	return append([]platform.Reply(nil), c.replies...), posted, c.reads
}

// TestRepliesCarryTheJournaledKey: a reply goes through SendReply with
// the uuid its message was journaled (and sent to claude) with, and the
// message it answers.
func TestRepliesCarryTheJournaledKey(t *testing.T) {
	chat := newFakeChat()
	h := newHarness(t, func(_ *Options, c *harnessConfig) { c.chat = chat })
	m := h.message("alice", "T1", "hello")
	h.deliver(m)
	h.rec.waitSend(t, "echo: hello")
	h.waitIdle()
	replies, posted, _ := chat.snapshot()
	if len(replies) != 1 || replies[0].Key == "" || replies[0].After != m.Target.MessageID || replies[0].Again {
		t.Fatalf("SendReply calls %+v, want one with the message's key, after it, not again", replies)
	}
	if posted[replies[0].Key] != 1 {
		t.Errorf("posted %v", posted)
	}
}

// TestKilledWhileReplyingFindsTheReply is the third cause of a doubled
// reply: the reply was posted and cc-connect killed before the journal's
// ack. After the restart recovery finds the turn complete in the
// transcript and the reply being posted; through a Replier it asks again
// with the same key, the platform finds the reply, and nothing is posted a
// second time, not even a notice.
func TestKilledWhileReplyingFindsTheReply(t *testing.T) {
	chat := newFakeChat()
	kp := newKillPoint(conv.PointReplied, 1)
	h, _ := newRealHarness(t, nil, nil)
	h.stop()
	cfg := *h.cfg
	cfg.stopAt, cfg.chat = kp.hook, chat
	h = startHarness(t, h.opts, &cfg, h.logs)

	m := h.message("alice", "T1", "count the files")
	h.deliver(m)
	h.rec.waitSend(t, "echo: count the files")
	kp.wait(t)
	h = h.kill(t, kp)
	rec := h.logs.WaitRecords(t, waitLimit, "Completing a reply that was being posted at the restart", 1)[0]
	h.waitIdle()
	if rec["found"] != float64(1) || rec["posted"] != float64(0) {
		t.Errorf("recovery logged %v, want the one part found and none posted", rec)
	}
	replies, posted, _ := chat.snapshot()
	if len(replies) != 2 || !replies[1].Again || replies[1].Key != replies[0].Key {
		t.Fatalf("SendReply calls %+v, want the reply and then the same key again", replies)
	}
	if posted[replies[0].Key] != 1 {
		t.Errorf("the reply was posted %d times, want once", posted[replies[0].Key])
	}
	if sends := h.rec.sends(""); len(sends) != 0 {
		t.Errorf("the restarted cc-connect posted %q, want nothing", sends)
	}
	if res := h.deliver(m); res.Status != platform.Duplicate {
		t.Errorf("redelivery: %+v, want a duplicate", res)
	}
	if got := claudeGot(t, h); strings.Join(got, "|") != "count the files" {
		t.Errorf("claude received %q, want the message once", got)
	}
}

// TestReplyBeforeItsRoot is the first cause of a lost message: a thread's
// root mention was pushed to an instance killed before it acknowledged it,
// and the restarted one gets a reply in that thread (no mention) before
// the root's redelivery. The reply is not dropped: the root is read back
// from the platform and accepted first, under its own id, then the reply;
// the root's own delivery, when it comes, is a duplicate. A thread whose
// root does not mention the bot is read once, and its chatter ignored.
func TestReplyBeforeItsRoot(t *testing.T) {
	yes := true
	chat := newFakeChat()
	h := newHarness(t, func(o *Options, c *harnessConfig) {
		o.Bindings[0].RequireMention = &yes
		c.chat = chat
	})
	chat.roots["T7"] = platform.HistoryMessage{ID: "root-7", MessageID: "T7", UserID: "alice", UserName: "alice",
		Text: "look at the logs", Mentioned: true, Root: true}
	chat.roots["T8"] = platform.HistoryMessage{ID: "root-8", MessageID: "T8", UserID: "bob", UserName: "bob",
		Text: "lunch?", Root: true}

	reply := h.message("bob", "T7", "the error is in main.go")
	if res := h.deliver(reply); res.Status != platform.Queued {
		t.Fatalf("the reply: %+v, want it queued", res)
	}
	h.rec.waitSend(t, "echo: look at the logs")
	h.rec.waitSend(t, "echo: the error is in main.go")
	h.waitIdle()
	if sends := h.rec.sends("echo:"); len(sends) != 2 || !strings.HasPrefix(sends[0], "echo: look at the logs") ||
		!strings.HasPrefix(sends[1], "echo: the error is in main.go") {
		t.Errorf("replies %q, want the root's, then the reply's", sends)
	}
	root := platform.Message{ID: "root-7", Target: platform.Target{Platform: "fake", Channel: "C1", Thread: "T7", MessageID: "T7"},
		UserID: "alice", UserName: "alice", Text: "look at the logs", Mentioned: true}
	if res := h.deliver(root); res.Status != platform.Duplicate {
		t.Errorf("the root's own delivery: %+v, want a duplicate", res)
	}

	// Chatter under a root without a mention: the first is journaled and
	// dropped once the root is read, the second ignored at once; neither
	// reaches Claude nor gets a word in the thread.
	h.deliver(h.message("bob", "T8", "pizza"))
	h.waitIdle()
	if res := h.deliver(h.message("bob", "T8", "pizza again")); res.Status != platform.Ignored {
		t.Errorf("chatter under a root without a mention, once read: %+v, want it ignored", res)
	}
	h.waitIdle()
	if _, _, reads := chat.snapshot(); reads != 2 {
		t.Errorf("%d thread reads, want one per thread", reads)
	}
	if got := h.fa.history(sess2); len(got) != 0 {
		t.Errorf("chatter reached Claude: %q", got)
	}
	if sends := h.rec.sends(""); len(sends) != 2 {
		t.Errorf("posted %q, want the two replies only", sends)
	}
}

// killInto is kill, with the restarted engine stopping at next, and the
// journals' reply marks dropped: the state a kill leaves that lands after
// the turn's result reached the transcript, before the reply was marked.
func (h *harness) killInto(t *testing.T, kp, next *killPoint) *harness {
	t.Helper()
	snap := t.TempDir()
	copyTree(t, h.opts.StateDir, snap)
	journals, _ := filepath.Glob(filepath.Join(snap, "inbox", "*.jsonl"))
	for _, j := range journals {
		data, err := os.ReadFile(j)
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, line := range strings.SplitAfter(string(data), "\n") {
			if !strings.Contains(line, `"op":"reply"`) {
				keep = append(keep, line)
			}
		}
		if err := os.WriteFile(j, []byte(strings.Join(keep, "")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kp.release <- true
	h.stop()
	opts := h.opts
	opts.StateDir = snap
	cfg := *h.cfg
	cfg.stopAt = next.hook
	nh := startHarness(t, opts, &cfg, h.logs)
	nh.ids.Store(h.ids.Load())
	return nh
}

// TestKilledTwiceWhileReplying: cc-connect is killed once the turn's
// result is in the transcript, before its reply was marked as being
// posted; the restarted one posts the reply from the transcript and is
// killed again before the ack. The third start finds the reply marked
// (recovery marks it before posting) and, through a Replier, finds it on
// the platform: the reply and its notice are in the chat once.
func TestKilledTwiceWhileReplying(t *testing.T) {
	chat := newFakeChat()
	first := newKillPoint(conv.PointReplied, 1)
	h, _ := newRealHarness(t, nil, nil)
	h.stop()
	cfg := *h.cfg
	cfg.stopAt, cfg.chat = first.hook, chat
	h = startHarness(t, h.opts, &cfg, h.logs)
	m := h.message("alice", "T1", "count the files")
	h.deliver(m)
	first.wait(t)
	// The first restart posts the reply found in the transcript (the
	// fake chat forgets the first post: it never landed, the kill came
	// before it), and is killed before its ack.
	chat.mu.Lock()
	chat.posted = map[string]int{}
	chat.mu.Unlock()
	second := newKillPoint(conv.PointReplied, 1)
	h = h.killInto(t, first, second)
	second.wait(t)
	if got := h.rec.sends("echo: count the files"); len(got) != 1 {
		t.Fatalf("the first restart posted the reply %d times, want once", len(got))
	}
	if got := h.rec.sends("its reply follows"); len(got) != 1 {
		t.Fatalf("the first restart's notices: %q", h.rec.sends(""))
	}
	h = h.kill(t, second)
	h.logs.WaitRecords(t, waitLimit, "Completing a reply that was being posted at the restart", 1)
	h.waitIdle()
	if sends := h.rec.sends(""); len(sends) != 0 {
		t.Errorf("the second restart posted %q, want nothing", sends)
	}
	if res := h.deliver(m); res.Status != platform.Duplicate {
		t.Errorf("redelivery: %+v, want a duplicate", res)
	}
}
