package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/platform"
)

// Exactly once under kill -9, with the kill points injected rather than
// timed: the engine stops at a point (Engine.stopAt), the test copies the
// state dir as that moment leaves it (every write is in the files, as
// after a SIGKILL), and a second engine starts on the copy with the same
// agent, transcripts and workspace, as the restarted cc-connect would. The
// first engine is then let go as if dead: the work stops where it was.

// killPoint stops an engine at point, the n-th time it is reached.
type killPoint struct {
	point   string
	n       int
	reached chan struct{} // closed when the engine waits at the point
	release chan bool     // true: die there; false: go on
	mu      sync.Mutex    // guards seen
	seen    int
}

func newKillPoint(point string, n int) *killPoint {
	return &killPoint{point: point, n: n, reached: make(chan struct{}), release: make(chan bool, 1)}
}

func (k *killPoint) hook(point string) bool {
	if point != k.point {
		return false
	}
	k.mu.Lock()
	k.seen++
	mine := k.seen == k.n
	k.mu.Unlock()
	if !mine {
		return false
	}
	close(k.reached)
	return <-k.release
}

// wait waits until the engine stands at the point.
func (k *killPoint) wait(t *testing.T) {
	t.Helper()
	select {
	case <-k.reached:
	case <-time.After(waitLimit):
		t.Fatalf("the engine never reached %q", k.point)
	}
}

// killedHarness runs a real-driver harness that stops at kp; after kill
// it returns the harness of the restarted cc-connect.
func killedHarness(t *testing.T, kp *killPoint) *harness {
	t.Helper()
	h, _ := newRealHarness(t, nil, nil)
	h.stop() // started without the hook; restarted with it below
	cfg := *h.cfg
	cfg.stopAt = kp.hook
	return startHarness(t, h.opts, &cfg, h.logs)
}

// kill copies the state dir as it is now (what SIGKILL would leave), lets
// the stopped engine die, and starts another on the copy.
func (h *harness) kill(t *testing.T, kp *killPoint) *harness {
	t.Helper()
	snap := t.TempDir()
	copyTree(t, h.opts.StateDir, snap)
	kp.release <- true
	h.stop()
	opts := h.opts
	opts.StateDir = snap
	cfg := *h.cfg
	cfg.stopAt, cfg.limitAfter = nil, nil
	nh := startHarness(t, opts, &cfg, h.logs)
	nh.ids.Store(h.ids.Load())
	return nh
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, src)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// claudeGot is what the fake claude received, in order, without recovery's
// continuation prompts.
func claudeGot(t *testing.T, h *harness) []string {
	t.Helper()
	var out []string
	for _, text := range fakeclaude.Texts(readRecord(t, h.opts.Agent.Env["FAKECLAUDE_RECORD"])) {
		if text != conv.ContinueText {
			out = append(out, text)
		}
	}
	return out
}

// TestRetryAfterKilledAcceptRunsOnce is the soak's finding: an event is
// received and journaled, the instance is killed before it acks, the next
// one recovers the message from the journal and answers it; then Slack's
// retry of the same event arrives. It must be a duplicate: right after
// the recovery, after the entry was acknowledged and the journal emptied,
// and after another restart.
func TestRetryAfterKilledAcceptRunsOnce(t *testing.T) {
	kp := newKillPoint(conv.PointAccepted, 1)
	h := killedHarness(t, kp)
	m := h.message("alice", "T1", "deploy it")
	done := make(chan error, 1)
	go func() {
		_, err := h.e.HandleMessage(context.Background(), m)
		done <- err
	}()
	kp.wait(t)
	h = h.kill(t, kp)
	if err := <-done; !errors.Is(err, conv.ErrKilled) {
		t.Fatalf("the killed accept returned %v", err)
	}

	h.rec.waitSend(t, "echo: deploy it")
	if got := h.rec.sends("cc-connect restarted. Running the message that was waiting: “deploy it”"); len(got) != 1 {
		t.Errorf("recovery notices = %q", got)
	}
	h.waitIdle()
	if res := h.deliver(m); res.Status != platform.Duplicate {
		t.Errorf("Slack's retry after the recovery: %+v, want a duplicate", res)
	}
	if n := h.pending(t1Key); n != 0 {
		t.Fatalf("%d messages pending after the recovered turn", n)
	}
	h = h.restart() // the journal is compacted when it is closed
	if fi, err := os.Stat(conv.InboxPath(h.opts.StateDir, t1Key)); err != nil || fi.Size() != 0 {
		t.Errorf("journal after a clean stop: %v, %v; want it emptied", fi, err)
	}
	if seen, _ := os.ReadFile(filepath.Join(h.opts.StateDir, "inbox", "seen.jsonl")); !strings.Contains(string(seen), m.ID) {
		t.Errorf("seen.jsonl = %q, want the emptied journal's id in it", seen)
	}
	if res := h.deliver(m); res.Status != platform.Duplicate {
		t.Errorf("the retry after another restart: %+v, want a duplicate", res)
	}
	h.say("alice", "T1", "a new one")
	h.rec.waitSend(t, "echo: a new one")
	h.waitIdle()
	if got := claudeGot(t, h); strings.Join(got, "|") != "deploy it|a new one" {
		t.Errorf("claude received %q, want each message once", got)
	}
}

// TestSameMessageTwiceInOneInstance: a redelivery within one run, after
// the first copy's turn ended and its entry was acknowledged, is a
// duplicate: with the acknowledged record still in the journal, and with
// the journal compacted (the id lives on in seen.jsonl).
func TestSameMessageTwiceInOneInstance(t *testing.T) {
	for _, compacted := range []bool{false, true} {
		t.Run(fmt.Sprintf("compacted=%v", compacted), func(t *testing.T) {
			h, _ := newRealHarness(t, nil, nil)
			if compacted {
				h.stop()
				cfg := *h.cfg
				cfg.compactBytes = 1 // at every ack that leaves nothing pending
				h = startHarness(t, h.opts, &cfg, h.logs)
			}
			m := h.message("alice", "T1", "only once")
			if res := h.deliver(m); res.Status != platform.Queued || res.Position != 0 {
				t.Fatalf("first copy: %+v, want queued to run at once", res)
			}
			h.rec.waitSend(t, "echo: only once")
			h.waitIdle()
			fi, err := os.Stat(conv.InboxPath(h.opts.StateDir, t1Key))
			if err != nil || (fi.Size() == 0) != compacted {
				t.Fatalf("journal after the turn: %v, %v; want it emptied only when compacted", fi, err)
			}
			if seen, _ := os.ReadFile(filepath.Join(h.opts.StateDir, "inbox", "seen.jsonl")); strings.Contains(string(seen), m.ID) != compacted {
				t.Errorf("seen.jsonl = %q; the id belongs there once its journal was compacted", seen)
			}
			if res := h.deliver(m); res.Status != platform.Duplicate {
				t.Errorf("second copy: %+v, want a duplicate", res)
			}
			h.waitIdle()
			if got := claudeGot(t, h); strings.Join(got, "|") != "only once" {
				t.Errorf("claude received %q", got)
			}
		})
	}
}

// TestTwinWaitsForItsSibling: Slack's app_mention twin of a message that is
// still being accepted is not a duplicate yet: a copy whose wait is cut
// short is reported not handled (the adapter leaves it unacknowledged),
// and one that waits is a duplicate only once its sibling is on disk.
func TestTwinWaitsForItsSibling(t *testing.T) {
	kp := newKillPoint(conv.PointClaimed, 1)
	h := killedHarness(t, kp)
	m := h.message("alice", "T1", "<@bot> deploy")
	m.Mentioned = true
	twin := m // same channel and ts: the same id

	first := make(chan platform.Result, 1)
	go func() { first <- h.deliver(m) }()
	kp.wait(t) // the first copy holds the claim, nothing is written

	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	res, err := h.e.HandleMessage(short, twin)
	cancel()
	if err == nil {
		t.Fatalf("a twin whose wait was cut short: %+v, want an error (not handled, not acked)", res)
	}

	type twinResult struct {
		res     platform.Result
		durable bool // the sibling's entry was in the journal when it returned
	}
	second := make(chan twinResult, 1)
	go func() {
		res, _ := h.e.HandleMessage(context.Background(), twin)
		data, _ := os.ReadFile(conv.InboxPath(h.opts.StateDir, t1Key))
		seen, _ := os.ReadFile(filepath.Join(h.opts.StateDir, "inbox", "seen.jsonl"))
		second <- twinResult{res, strings.Contains(string(data)+string(seen), m.ID)}
	}()
	kp.release <- false // the first copy goes on
	if res := <-first; res.Status != platform.Queued {
		t.Errorf("first copy: %+v", res)
	}
	if r := <-second; r.res.Status != platform.Duplicate || !r.durable {
		t.Errorf("twin: %+v, sibling on disk %v; want a duplicate after the sibling was journaled", r.res, r.durable)
	}
	h.rec.waitSend(t, "echo: <@bot> deploy")
	h.waitIdle()
	if got := claudeGot(t, h); len(got) != 1 {
		t.Errorf("claude received %q, want the message once", got)
	}
}

// TestKilledAfterTheStartMark: the start mark is in the journal (written,
// not fsynced) and the message never reached claude. The restarted
// instance asks the transcript, finds nothing, says what it knows and
// sends it: once.
func TestKilledAfterTheStartMark(t *testing.T) {
	kp := newKillPoint(conv.PointStarted, 2)
	h := killedHarness(t, kp)
	h.say("alice", "T1", "first")
	h.rec.waitSend(t, "echo: first")
	h.waitIdle()
	h.say("alice", "T1", "second")
	kp.wait(t)
	h = h.kill(t, kp)
	note := h.rec.waitSend(t, "cc-connect restarted.")
	if !strings.Contains(note.Text, "Your message may not have reached the agent; sending it now: “second”") {
		t.Errorf("notice = %q", note.Text)
	}
	h.rec.waitSend(t, "echo: second")
	h.waitIdle()
	if got := claudeGot(t, h); strings.Join(got, "|") != "first|second" {
		t.Errorf("claude received %q, want each message once", got)
	}
}

// TestKilledWhileReplying: the reply was posted, the entry not yet
// acknowledged. The restarted instance finds the finished turn in the
// transcript and the journal's note that the reply was being posted: it
// posts the reply again, saying why, and never runs the message again; a
// redelivery is a duplicate.
func TestKilledWhileReplying(t *testing.T) {
	kp := newKillPoint(conv.PointReplied, 1)
	h := killedHarness(t, kp)
	m := h.message("alice", "T1", "count the files")
	h.deliver(m)
	h.rec.waitSend(t, "echo: count the files")
	kp.wait(t)
	h = h.kill(t, kp)
	note := h.rec.waitSend(t, "cc-connect restarted.")
	if !strings.Contains(note.Text, "its reply was being posted; in case it did not arrive, here it is again") {
		t.Errorf("notice = %q", note.Text)
	}
	h.rec.waitSend(t, "echo: count the files")
	h.waitIdle()
	if res := h.deliver(m); res.Status != platform.Duplicate {
		t.Errorf("redelivery: %+v, want a duplicate", res)
	}
	if got := claudeGot(t, h); strings.Join(got, "|") != "count the files" {
		t.Errorf("claude received %q, want the message once", got)
	}
}

// TestJournalOfTheLandedVersionReplays: a journal the version before this
// format left at a kill (testdata/journal-landed.jsonl, written by it: a
// first message started, a second waiting) replays after the upgrade: the
// first is asked about in the transcript and sent, the second follows,
// each once, and their redeliveries are duplicates.
func TestJournalOfTheLandedVersionReplays(t *testing.T) {
	h, _ := newRealHarness(t, nil, nil)
	h.stop()
	data, err := os.ReadFile(filepath.Join("testdata", "journal-landed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	path := conv.InboxPath(h.opts.StateDir, t1Key)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h = h.restart()
	note := h.rec.waitSend(t, "cc-connect restarted.")
	if !strings.Contains(note.Text, "may not have reached the agent; sending it now: “first from before the upgrade”") {
		t.Errorf("notice = %q", note.Text)
	}
	h.rec.waitSend(t, "echo: second from before the upgrade")
	h.waitIdle()
	if got := claudeGot(t, h); strings.Join(got, "|") != "first from before the upgrade|second from before the upgrade" {
		t.Errorf("claude received %q, want each once, in order", got)
	}
	for _, id := range []string{"m901", "m902"} {
		m := h.message("alice", "T1", "again")
		m.ID = id
		if res := h.deliver(m); res.Status != platform.Duplicate {
			t.Errorf("redelivery of %s: %+v, want a duplicate", id, res)
		}
	}
}
