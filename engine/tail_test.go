package engine

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/spend"
)

// slowTails holds every turn's tail (its record save, ledger write and
// journal ack) until release: a disk that takes its time.
type slowTails struct {
	held chan struct{}
	once sync.Once
}

func newSlowTails(t *testing.T) *slowTails {
	s := &slowTails{held: make(chan struct{})}
	t.Cleanup(s.release) // before the harness stops: its stop waits for tails
	return s
}

func (s *slowTails) hook() { <-s.held }

func (s *slowTails) release() { s.once.Do(func() { close(s.held) }) }

// tailsAdded counts the turns whose tail was added: each one's ack is
// written by then.
type tailsAdded chan struct{}

func newTailsAdded() tailsAdded { return make(tailsAdded, 16) }

func (a tailsAdded) hook() { a <- struct{}{} }

// wait waits for n more tails.
func (a tailsAdded) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-a:
		case <-time.After(waitLimit):
			t.Fatal("no turn's tail was added")
		}
	}
}

// wantTurnFigures checks that the record on disk has the fake's turn
// figures, when (after what) it should.
func wantTurnFigures(t *testing.T, h *harness, when string) {
	t.Helper()
	if rec, ok, err := conv.NewStore(h.opts.StateDir).Load(t1Key, time.Now()); !ok || err != nil || rec.ContextTokens != 50000 {
		t.Errorf("the record on disk %s = %+v (found %v, %v); want the last turn's figures", when, rec, ok, err)
	}
}

// TestNextTurnDoesNotWaitForTheTail: while a turn's fsyncs after its reply
// are held, the next message of the conversation still runs and is
// answered; both acks are written (neither message is pending), the
// record on disk waits for the tail and the engine is not idle until the
// tails are done; then the record holds the turns' figures.
func TestNextTurnDoesNotWaitForTheTail(t *testing.T) {
	t.Parallel()
	slow, added := newSlowTails(t), newTailsAdded()
	h := newHarness(t, func(_ *Options, c *harnessConfig) { c.beforeTail, c.tailAdded = slow.hook, added.hook })
	t.Cleanup(slow.release) // runs before h.stop, registered earlier
	h.say("alice", "T1", "one")
	h.rec.waitSend(t, "echo: one")
	h.say("alice", "T1", "two")
	h.rec.waitSend(t, "echo: two")
	added.wait(t, 2)
	if n := h.pending(t1Key); n != 0 {
		t.Errorf("%d messages pending while the first turn's tail is held, want 0 (the acks are written before it)", n)
	}
	if h.e.convs.Outstanding() == 0 {
		t.Error("the engine counts as idle while a turn's writes are held")
	}
	if rec, _, _ := conv.NewStore(h.opts.StateDir).Load(t1Key, time.Now()); rec.ContextTokens != 0 {
		t.Errorf("the record on disk has the turn's figures (%d tokens) before its tail ran", rec.ContextTokens)
	}
	slow.release()
	h.waitIdle()
	if n := h.pending(t1Key); n != 0 {
		t.Errorf("%d messages pending after the tails ran, want 0", n)
	}
	wantTurnFigures(t, h, "after the tails")
}

// TestChargeCountsBeforeTheLedgerIsWritten: the spending ledger is written
// on the turn's tail, but the charge counts at once: with the tail held, a
// turn over the cap refuses the next one, and the ledger file is written
// once the tail runs.
func TestChargeCountsBeforeTheLedgerIsWritten(t *testing.T) {
	t.Parallel()
	noon := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "spend.json")
	ledger, err := spend.Open(path, time.UTC, func() time.Time { return noon })
	if err != nil {
		t.Fatal(err)
	}
	slow := newSlowTails(t)
	h := newHarness(t, func(o *Options, c *harnessConfig) {
		o.Spending = ledger
		o.Bindings[0].Caps = spend.Caps{UserDaily: 0.005} // the fake's first turn costs $0.01
		c.beforeTail = slow.hook
	})
	t.Cleanup(slow.release)
	h.say("bob", "T1", "one")
	h.rec.waitSend(t, "echo: one")
	h.say("bob", "T1", "two")
	h.rec.waitSend(t, "spending cap")
	if got := h.rec.sends("echo: two"); len(got) != 0 {
		t.Errorf("a turn over the cap ran while the ledger's write was held: %q", got)
	}
	if l, err := spend.Open(path, time.UTC, func() time.Time { return noon }); err != nil || l.User("fake/*", "bob").Day != 0 {
		t.Fatalf("the ledger on disk before the tail ran: %v (open: %v); want nothing yet", l.User("fake/*", "bob"), err)
	}
	slow.release()
	h.waitIdle()
	l, err := spend.Open(path, time.UTC, func() time.Time { return noon })
	if err != nil {
		t.Fatal(err)
	}
	if got := l.User("fake/*", "bob").Day; got < 0.0099 || got > 0.0101 {
		t.Errorf("the ledger on disk after the tail: bob spent $%.4f, want $0.01", got)
	}
}

// TestTurnsCloseTogetherShareOneTail: the tails of turns that follow each
// other within the quiet time run as one batch, and a shutdown runs it at
// once: before it the record on disk lacks the turns' figures though both
// acks are written; after it the record has the last turn's figures.
func TestTurnsCloseTogetherShareOneTail(t *testing.T) {
	t.Parallel()
	var batches atomic.Int32
	added := newTailsAdded()
	h := newHarness(t, func(_ *Options, c *harnessConfig) {
		c.tailQuiet, c.tailMaxWait = time.Hour, time.Hour
		c.beforeTail, c.tailAdded = func() { batches.Add(1) }, added.hook
	})
	h.say("alice", "T1", "one")
	h.rec.waitSend(t, "echo: one")
	h.say("alice", "T1", "two")
	h.rec.waitSend(t, "echo: two")
	added.wait(t, 2)
	if n := h.pending(t1Key); n != 0 {
		t.Errorf("%d messages pending while the tail waits, want 0 (the acks are written before it)", n)
	}
	if rec, _, _ := conv.NewStore(h.opts.StateDir).Load(t1Key, time.Now()); rec.ContextTokens != 0 {
		t.Errorf("the record on disk has the turns' figures (%d tokens) while the tail waits", rec.ContextTokens)
	}
	if n := batches.Load(); n != 0 {
		t.Errorf("%d tail batches ran within the quiet time, want 0", n)
	}
	h.stop()
	if n := batches.Load(); n != 1 {
		t.Errorf("%d tail batches ran for two turns close together, want 1", n)
	}
	wantTurnFigures(t, h, "after the shutdown")
}

// TestTailWaitsNoLongerThanItsBound: with a conversation that is never
// quiet long enough, the tail still runs by its bound.
func TestTailWaitsNoLongerThanItsBound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(_ *Options, c *harnessConfig) {
		c.tailQuiet, c.tailMaxWait = time.Hour, 50*time.Millisecond
	})
	h.say("alice", "T1", "one")
	h.rec.waitSend(t, "echo: one")
	h.waitIdle()
	wantTurnFigures(t, h, "once idle")
}
