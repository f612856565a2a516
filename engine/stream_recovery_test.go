package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

// What a kill does to a streamed reply, on each platform's terms. A
// streamStore is a chat that outlives cc-connect's restarts and behaves
// as one platform does with the parts of a reply (the adapters' own tests
// check the real Slack, Discord and Telegram behind the same interfaces
// against their fakes):
//
//   - slack: posts and final edits carry the reply's key and part
//     (metadata), and a reply asked for again is looked up by them;
//   - discord: a post carries a nonce made of the key and the part, and a
//     repeated nonce gets the message that has it, nothing new; edits
//     carry nothing;
//   - telegram: nothing is tagged; the engine records each part as it
//     lands (a PartRecorder).
type streamStore struct {
	kind string

	mu     sync.Mutex
	seq    int
	msgs   []*streamMsg
	nonces map[string]*streamMsg
	posts  int
	alive  *atomic.Bool // the adapter instance of the running cc-connect
	// afterPart, when set, is called once after a part of a final reply
	// beyond the streamed messages was posted (and recorded), with the
	// part's index; the test holds cc-connect there to kill it.
	afterPart func(part int)
	changed   chan struct{}
}

type streamMsg struct {
	id, text string
	key      string // slack: the metadata's key
	part     int
	deleted  bool
}

func newStreamStore(kind string) *streamStore {
	return &streamStore{kind: kind, nonces: map[string]*streamMsg{}, changed: make(chan struct{})}
}

// errDead is what a killed cc-connect's adapter gets: nothing it does after
// the kill reaches the chat.
var errDead = errors.New("cc-connect was killed")

// streamLimit is the fake's message size: a reply of a few words splits.
const streamLimit = 24

func splitStream(text string) []string {
	var out []string
	for len(text) > streamLimit {
		out = append(out, text[:streamLimit])
		text = text[streamLimit:]
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}

func (s *streamStore) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// visible is what a reader of the thread sees: each message's text, in
// order, deleted ones left out.
func (s *streamStore) visible() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.msgs {
		if !m.deleted {
			out = append(out, m.text)
		}
	}
	return out
}

func (s *streamStore) postCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts
}

func (s *streamStore) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; the chat shows %q", what, s.visible())
		}
	}
}

// streamPlatform is one cc-connect instance's adapter over the store.
type streamPlatform struct {
	richPlatform
	s     *streamStore
	alive *atomic.Bool
}

type telegramStream struct{ streamPlatform }

func (telegramStream) RecordsParts() {}

var (
	_ platform.ReplyFinisher = streamPlatform{}
	_ platform.Replier       = streamPlatform{}
	_ platform.Deleter       = streamPlatform{}
	_ platform.PartRecorder  = telegramStream{}
)

// adapter gives each start of cc-connect its own instance; the previous
// one is dead.
func (s *streamStore) adapter(rec *fakePlatform) platform.Adapter {
	alive := &atomic.Bool{}
	alive.Store(true)
	s.mu.Lock()
	if s.alive != nil {
		s.alive.Store(false)
	}
	s.alive = alive
	s.mu.Unlock()
	p := streamPlatform{richPlatform: richPlatform{rec}, s: s, alive: alive}
	if s.kind == "telegram" {
		return telegramStream{p}
	}
	return p
}

// kill makes the running instance's adapter dead.
func (s *streamStore) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.alive.Store(false)
}

func (p streamPlatform) Capabilities() platform.Capabilities {
	return platform.Capabilities{MessageLimit: streamLimit, Edits: true, EditInterval: time.Millisecond, Deletes: true}
}

func (p streamPlatform) target(to platform.Target, m *streamMsg) platform.Target {
	return platform.Target{Platform: to.Platform, Channel: to.Channel, Thread: to.Thread, MessageID: m.id}
}

// post posts one part; key is "" for an untagged post (the stream's).
func (p streamPlatform) post(to platform.Target, text, key string, part int) (platform.Target, error) {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !p.alive.Load() {
		return platform.Target{}, errDead
	}
	nonce := fmt.Sprintf("%s/%d", key, part)
	if m, ok := s.nonces[nonce]; ok && key != "" && s.kind == "discord" {
		return p.target(to, m), nil // Discord answers a repeated nonce with its message
	}
	s.seq++
	s.posts++
	m := &streamMsg{id: fmt.Sprintf("m%d", s.seq), text: text, part: part}
	if key != "" && s.kind == "slack" {
		m.key = key
	}
	if key != "" && s.kind == "discord" {
		s.nonces[nonce] = m
	}
	s.msgs = append(s.msgs, m)
	s.notifyLocked()
	return p.target(to, m), nil
}

// edit changes a message; a slack final edit tags it.
func (p streamPlatform) edit(m platform.Target, text, key string, part int) error {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !p.alive.Load() {
		return errDead
	}
	for _, x := range s.msgs {
		if x.id == m.MessageID && !x.deleted {
			x.text = text
			if key != "" && s.kind == "slack" {
				x.key, x.part = key, part
			}
			s.notifyLocked()
			return nil
		}
	}
	return fmt.Errorf("message %s not found", m.MessageID)
}

// found is what a slack lookup finds of key: part -> message.
func (p streamPlatform) found(to platform.Target, key string) map[int]platform.Target {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]platform.Target{}
	if s.kind != "slack" || key == "" {
		return out
	}
	for _, m := range s.msgs {
		if m.key == key && !m.deleted {
			out[m.part] = p.target(to, m)
		}
	}
	return out
}

func (p streamPlatform) EditReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string) ([]platform.Target, error) {
	out := []platform.Target{}
	for i, part := range splitStream(text) {
		if i < len(msgs) {
			if err := p.edit(msgs[i], part, "", 0); err != nil {
				return out, err
			}
			out = append(out, msgs[i])
			continue
		}
		m, err := p.post(to, part, "", 0)
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
	return out, nil
}

func (p streamPlatform) FinishReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string, r platform.Reply) ([]platform.Target, error) {
	var found map[int]platform.Target
	if r.Again {
		found = p.found(to, r.Key)
	}
	parts := splitStream(text)
	out := []platform.Target{}
	for i, part := range parts {
		m, ok := found[i]
		if i < len(msgs) {
			m, ok = msgs[i], true
		}
		if ok {
			if err := p.edit(m, part, r.Key, i); err != nil {
				return out, err
			}
			out = append(out, m)
			continue
		}
		if r.Done != nil && r.Done(i) {
			continue
		}
		m, err := p.post(to, part, r.Key, i)
		if err != nil {
			return out, err
		}
		if r.Landed != nil {
			r.Landed(i, len(parts))
		}
		out = append(out, m)
		p.s.hold(i)
	}
	return out, nil
}

func (p streamPlatform) SendReply(ctx context.Context, to platform.Target, text string, r platform.Reply) (platform.ReplyResult, error) {
	var found map[int]platform.Target
	if r.Again {
		found = p.found(to, r.Key)
	}
	parts := splitStream(text)
	res := platform.ReplyResult{Parts: len(parts)}
	for i, part := range parts {
		if _, ok := found[i]; ok {
			res.Found++
			continue
		}
		if r.Done != nil && r.Done(i) {
			continue
		}
		m, err := p.post(to, part, r.Key, i)
		if err != nil {
			return res, err
		}
		res.Posted++
		res.Last = m
		if r.Landed != nil {
			r.Landed(i, len(parts))
		}
		p.s.hold(i)
	}
	return res, nil
}

// hold calls afterPart once.
func (s *streamStore) hold(part int) {
	s.mu.Lock()
	hook := s.afterPart
	s.afterPart = nil
	s.mu.Unlock()
	if hook != nil {
		hook(part)
	}
}

func (p streamPlatform) Delete(ctx context.Context, m platform.Target) error {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !p.alive.Load() {
		return errDead
	}
	for _, x := range s.msgs {
		if x.id == m.MessageID {
			x.deleted = true
		}
	}
	s.notifyLocked()
	return nil
}

// Edit is the plain edit (cutStream's mark; progress messages are the
// recorder's).
func (p streamPlatform) Edit(ctx context.Context, m platform.Target, text string) error {
	if err := p.edit(m, text, "", 0); err == nil || errors.Is(err, errDead) {
		return err
	}
	return p.richPlatform.Edit(ctx, m, text)
}

// killStreamHere is a kill -9 of cc-connect where it stands: the state dir
// as it is now is what the restart finds, the running adapter is dead (so
// nothing the old engine still does reaches the chat), then release lets
// the old engine go and it is stopped.
func (h *harness) killStreamHere(t *testing.T, s *streamStore, release func()) *harness {
	t.Helper()
	return h.killStreamInto(t, s, release, nil)
}

// killStreamInto is killStreamHere with the restarted engine stopping at
// next's point.
func (h *harness) killStreamInto(t *testing.T, s *streamStore, release func(), next *killPoint) *harness {
	t.Helper()
	snap := t.TempDir()
	copyTree(t, h.opts.StateDir, snap)
	s.kill()
	release()
	h.stop()
	opts := h.opts
	opts.StateDir = snap
	cfg := *h.cfg
	cfg.stopAt = nil
	if next != nil {
		cfg.stopAt = next.hook
	}
	nh := startHarness(t, opts, &cfg, h.logs)
	nh.ids.Store(h.ids.Load())
	return nh
}

func newStreamHarness(t *testing.T, s *streamStore, stopAt func(string) bool) *harness {
	fa := newFakeAgents()
	return newHarness(t, func(_ *Options, c *harnessConfig) {
		c.fa, c.adapter, c.stopAt = fa, s.adapter, stopAt
	})
}

// TestStreamedReplyAcrossKills: on each platform, a kill after the
// stream's first post, after the final edit, and between the parts of a
// multi-part final edit leaves the thread showing the reply once, whole,
// and nothing that reads as a reply but is not one.
func TestStreamedReplyAcrossKills(t *testing.T) {
	const text = "[[STREAM]] tell me about the build"
	reply := "echo: " + text
	for _, kind := range []string{"slack", "discord", "telegram"} {
		t.Run(kind+"/after the stream's first post", func(t *testing.T) {
			s := newStreamStore(kind)
			kp := newKillPoint(conv.PointStreamed, 1)
			h := newStreamHarness(t, s, kp.hook)
			h.deliver(h.message("alice", "T1", text))
			kp.wait(t)
			if got := s.visible(); len(got) != 1 || !strings.HasSuffix(got[0], "…") {
				t.Fatalf("the stream shows %q, want its first text", got)
			}
			h = h.killStreamHere(t, s, func() { kp.release <- false })
			// The CLI never finished the turn: it is resumed, and what was
			// streamed says it was cut off.
			resumed := "echo: " + conv.ContinueText
			s.waitFor(t, "the resumed turn's reply", func() bool {
				return strings.Contains(strings.Join(s.visible(), ""), resumed)
			})
			h.waitIdle()
			got := s.visible()
			if len(got) == 0 || got[0] != render.CutOffText {
				t.Errorf("the streamed message shows %q, want it marked cut off (%q)", got, render.CutOffText)
			}
			if rest := strings.Join(got[1:], ""); strings.Count(rest, resumed) != 1 || strings.Contains(rest, "…") {
				t.Errorf("after it the thread shows %q, want the resumed turn's reply once", rest)
			}
		})

		t.Run(kind+"/after the stream's first post, then after the resumed turn's reply", func(t *testing.T) {
			s := newStreamStore(kind)
			kp := newKillPoint(conv.PointStreamed, 1)
			h := newStreamHarness(t, s, kp.hook)
			h.deliver(h.message("alice", "T1", text))
			kp.wait(t)
			again := newKillPoint(conv.PointReplied, 1)
			h = h.killStreamInto(t, s, func() { kp.release <- false }, again)
			again.wait(t)
			h = h.killStreamHere(t, s, func() { again.release <- true })
			h.logs.WaitRecords(t, waitLimit, "Recovering pending messages", 2)
			h.waitIdle()
			// The resumed turn's reply is where it was posted, once; the
			// message cut off by the first kill still says so.
			resumed := "echo: " + conv.ContinueText
			got := s.visible()
			if len(got) == 0 || got[0] != render.CutOffText {
				t.Errorf("the first stream shows %q, want it marked cut off", got)
			}
			if rest := strings.Join(got[1:], ""); strings.Count(rest, resumed) != 1 {
				t.Errorf("after it the thread shows %q, want the resumed turn's reply once", rest)
			}
		})

		t.Run(kind+"/after the final edit", func(t *testing.T) {
			s := newStreamStore(kind)
			kp := newKillPoint(conv.PointReplied, 1)
			h := newStreamHarness(t, s, kp.hook)
			h.deliver(h.message("alice", "T1", text))
			s.waitFor(t, "the stream", func() bool { return len(s.visible()) > 0 })
			h.cfg.fa.release(t)
			kp.wait(t)
			posts := s.postCount()
			before := strings.Join(s.visible(), "")
			if !strings.HasPrefix(before, reply) {
				t.Fatalf("before the kill the thread shows %q, want the reply", before)
			}
			h = h.killStreamHere(t, s, func() { kp.release <- true })
			h.logs.WaitRecords(t, waitLimit, "Finishing a streamed reply after the restart", 1)
			h.waitIdle()
			if got := strings.Join(s.visible(), ""); got != before {
				t.Errorf("after the restart the thread shows %q, want the reply once, as before: %q", got, before)
			}
			if n := s.postCount(); n != posts {
				t.Errorf("the restart posted %d messages more, want none", n-posts)
			}
			if sends := h.rec.sends(""); len(sends) != 0 {
				t.Errorf("the restart posted %q besides, want nothing", sends)
			}
		})

		t.Run(kind+"/between a posted reply's parts", func(t *testing.T) {
			// Done before the stream's hold: posted, not streamed.
			const quick = "tell me about the build, in parts"
			s := newStreamStore(kind)
			h := newStreamHarness(t, s, nil)
			held, release := make(chan int, 1), make(chan struct{})
			s.afterPart = func(part int) {
				held <- part
				<-release
			}
			h.deliver(h.message("alice", "T1", quick))
			select {
			case <-held:
			case <-time.After(waitLimit):
				t.Fatal("the reply's first part was never posted")
			}
			h = h.killStreamHere(t, s, func() { close(release) })
			h.logs.WaitRecords(t, waitLimit, "Completing a reply that was being posted at the restart", 1)
			h.waitIdle()
			if got, want := s.visible(), splitStream("echo: "+quick+harnessCtx); !slices.Equal(got, want) {
				t.Errorf("after the restart the thread shows %q, want the reply once, whole: %q", got, want)
			}
			if sends := h.rec.sends(""); len(sends) != 0 {
				t.Errorf("the restart posted %q besides, want nothing", sends)
			}
		})

		t.Run(kind+"/between the final edit's parts", func(t *testing.T) {
			s := newStreamStore(kind)
			h := newStreamHarness(t, s, nil)
			held, release := make(chan int, 1), make(chan struct{})
			s.afterPart = func(part int) {
				held <- part
				<-release
			}
			h.deliver(h.message("alice", "T1", text))
			s.waitFor(t, "the stream", func() bool { return len(s.visible()) > 0 })
			h.cfg.fa.release(t)
			var part int
			select {
			case part = <-held:
			case <-time.After(waitLimit):
				t.Fatal("the final edit never posted a part beyond the stream")
			}
			if shown := s.visible(); len(shown) != part+1 {
				t.Fatalf("held after part %d with %q shown", part, shown)
			}
			h = h.killStreamHere(t, s, func() { close(release) })
			h.logs.WaitRecords(t, waitLimit, "Finishing a streamed reply after the restart", 1)
			h.waitIdle()
			got := s.visible()
			if want := splitStream(reply + harnessCtx); !slices.Equal(got, want) {
				t.Errorf("after the restart the thread shows %q, want the reply once, whole: %q", got, want)
			}
		})
	}
}

// harnessCtx is the context line the fake agent's figures give a reply.
const harnessCtx = "\n[ctx: 25%]"

// TestFailedTurnMarksItsStream: a turn whose agent dies while its reply
// streams leaves the streamed text marked as unfinished, not as a reply,
// and the turn recovered once answers below it.
func TestFailedTurnMarksItsStream(t *testing.T) {
	s := newStreamStore("slack")
	h := newStreamHarness(t, s, nil)
	h.deliver(h.message("alice", "T1", "[[STREAM]] tell me about the build"))
	s.waitFor(t, "the stream", func() bool { return len(s.visible()) > 0 })
	fa := h.cfg.fa
	fa.mu.Lock()
	p := fa.procs[len(fa.procs)-1]
	fa.mu.Unlock()
	p.exit() // the agent dies mid-turn
	resumed := "echo: " + conv.ContinueText
	s.waitFor(t, "the recovered turn's reply", func() bool {
		return strings.Contains(strings.Join(s.visible(), ""), resumed)
	})
	h.waitIdle()
	got := s.visible()
	if len(got) == 0 || !strings.HasPrefix(got[0], "echo: [[STR") || strings.HasSuffix(got[0], "…") ||
		!strings.Contains(strings.Join(got, ""), render.FailedText) {
		t.Errorf("the thread shows %q, want the streamed text first, marked unfinished (%q)", got, render.FailedText)
	}
}
