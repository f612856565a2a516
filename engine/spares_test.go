package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/lease"
)

// waitSpares waits until the pool's ready and starting counts satisfy pred.
func waitSpares(t testing.TB, p *procs.Spares, what string, pred func(ready, starting int) bool) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		ch := p.Changed()
		if pred(p.Count()) {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			r, s := p.Count()
			t.Fatalf("timed out waiting for %s (ready %d, starting %d)", what, r, s)
		}
	}
}

func spareHarness(t *testing.T, mutate func(*Options)) *harness {
	t.Helper()
	fa := newFakeAgents()
	fa.chosenIDs = true
	return newHarness(t, func(o *Options, c *harnessConfig) {
		o.Prewarm = 1
		c.fa = fa
		if mutate != nil {
			mutate(o)
		}
	})
}

// procOf is the fake process that ran session id.
func (fa *fakeAgents) procOf(id string) *fakeProc {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	for _, p := range fa.procs {
		if p.id == id {
			return p
		}
	}
	return nil
}

func (h *harness) record(thread string) conv.Record {
	h.t.Helper()
	s := h.e.convs.Lookup("fake/C1/" + thread)
	if s == nil {
		h.t.Fatalf("no session for thread %s", thread)
	}
	return s.Record()
}

// TestSpareServesTheNextNewConversation: after a turn the workspace gets a
// spare; the next new conversation runs on it (no spawn on its path), under
// the id the spare was started with, holding its lease; after that turn a
// new spare replaces it.
func TestSpareServesTheNextNewConversation(t *testing.T) {
	h := spareHarness(t, nil)
	h.say("alice", "T1", "one")
	h.rec.waitSend(t, "echo: one")
	waitSpares(t, h.e.spare, "a spare after the first turn", func(r, _ int) bool { return r == 1 })
	spawns := h.fa.spawnsSnapshot()
	if len(spawns) != 2 {
		t.Fatalf("%d spawns, want the conversation's and the spare's", len(spawns))
	}
	spareID := spawns[1].SessionID
	if spareID == "" || spawns[1].ResumeID != "" || spawns[1].Dir != h.ws || spawns[1].Model != "" || spawns[1].PermissionMode != "" {
		t.Fatalf("spare started with %+v, want a new session in the workspace with the defaults", spawns[1])
	}
	if h.fa.history(spareID) != nil {
		t.Fatalf("the spare ran a turn before any conversation took it: %q", h.fa.history(spareID))
	}

	h.say("bob", "T2", "two")
	h.rec.waitSend(t, "echo: two")
	if got := h.fa.history(spareID); strings.Join(got, "|") != "two" {
		t.Errorf("the spare's session ran %q, want the new conversation's message", got)
	}
	if rec := h.record("T2"); rec.SessionID != spareID || rec.NewSessionID != "" {
		t.Errorf("T2's record: session %q (chosen %q), want the spare's %q", rec.SessionID, rec.NewSessionID, spareID)
	}
	// The lease moved with the process: nobody else may run this session.
	if l, err := lease.Session(h.opts.StateDir, spareID); !errors.Is(err, lease.ErrHeld) {
		if l != nil {
			_ = l.Release()
		}
		t.Errorf("leasing the taken spare's session: %v, want it held", err)
	}
	// Replaced after use: a third spawn, a new id, after T2's turn.
	waitSpares(t, h.e.spare, "the spare replaced", func(r, _ int) bool { return r == 1 })
	spawns = h.fa.spawnsSnapshot()
	if len(spawns) != 3 || spawns[2].SessionID == "" || spawns[2].SessionID == spareID || spawns[2].ResumeID != "" {
		t.Fatalf("spawns %+v, want a new spare after the taken one", spawns)
	}
	// A later turn in T2 keeps its process: no spawn, no spare taken.
	h.say("bob", "T2", "three")
	h.rec.waitSend(t, "echo: three")
	h.waitIdle()
	if n := len(h.fa.spawnsSnapshot()); n != 3 {
		t.Errorf("%d spawns after a later turn, want 3", n)
	}
	if r, s := h.e.spare.Count(); r+s != 1 {
		t.Errorf("%d ready and %d starting spares, want prewarm = 1", r, s)
	}
}

// TestSpareNotTaken: a conversation that resumes, or runs another model,
// starts its own process and leaves the spare.
func TestSpareNotTaken(t *testing.T) {
	h := spareHarness(t, nil)
	h.say("alice", "T1", "one")
	h.rec.waitSend(t, "echo: one")
	waitSpares(t, h.e.spare, "a spare", func(r, _ int) bool { return r == 1 })
	spareID := h.fa.spawnsSnapshot()[1].SessionID

	h.say("alice", "T2", "!model opus")
	h.waitIdle()
	h.say("alice", "T2", "with opus")
	h.rec.waitSend(t, "echo: with opus")
	spawns := h.fa.spawnsSnapshot()
	if last := spawns[len(spawns)-1]; last.Model != "opus" || last.SessionID == spareID {
		t.Errorf("T2 started %+v, want its own process with its model", last)
	}
	if h.fa.history(spareID) != nil {
		t.Errorf("a conversation with another model ran on the spare")
	}
	if r, _ := h.e.spare.Count(); r != 1 {
		t.Errorf("%d ready spares, want the unused one kept", r)
	}
}

// TestSparesGiveWayAtTheCap: spares count against max_processes; a
// conversation that cannot use one closes it before an idle conversation
// is reaped, and no spare starts while the cap is full.
func TestSparesGiveWayAtTheCap(t *testing.T) {
	h := spareHarness(t, func(o *Options) { o.MaxProcesses = 2 })
	h.say("alice", "T1", "one")
	h.rec.waitSend(t, "echo: one")
	waitSpares(t, h.e.spare, "a spare", func(r, _ int) bool { return r == 1 })
	spareID := h.fa.spawnsSnapshot()[1].SessionID
	t1 := h.record("T1").SessionID

	h.say("alice", "T2", "!model opus")
	h.waitIdle()
	h.say("alice", "T2", "needs a slot")
	h.rec.waitSend(t, "echo: needs a slot")
	h.waitIdle()
	if p := h.fa.procOf(spareID); p == nil || p.alive() {
		t.Errorf("the spare still runs: it should have given its slot away")
	}
	if p := h.fa.procOf(t1); p == nil || !p.alive() {
		t.Errorf("T1's idle process was reaped while a spare could give way")
	}
	h.fa.mu.Lock()
	maxLive := h.fa.maxLive
	h.fa.mu.Unlock()
	if maxLive > 2 {
		t.Errorf("max live processes %d, want at most max_processes = 2", maxLive)
	}
	// The cap is full (T1 and T2 idle): no spare starts after T2's turn.
	if r, s := h.e.spare.Count(); r+s != 0 {
		t.Errorf("%d ready and %d starting spares at a full cap", r, s)
	}
	if n := len(h.fa.spawnsSnapshot()); n != 3 {
		t.Errorf("%d spawns, want T1's, the spare's and T2's", n)
	}
}

// TestSpareReapedWhenIdle: a spare unused for idle_timeout after its
// workspace's last turn closes, as an idle conversation's process does.
func TestSpareReapedWhenIdle(t *testing.T) {
	h := spareHarness(t, func(o *Options) { o.IdleTimeout = 100 * time.Millisecond })
	h.say("alice", "T1", "one")
	h.rec.waitSend(t, "echo: one")
	h.fa.waitFor(t, "the spare to start", func(fa *fakeAgents) bool { return len(fa.spawns) == 2 })
	h.fa.waitFor(t, "every process to close", func(fa *fakeAgents) bool { return fa.live == 0 })
	waitSpares(t, h.e.spare, "the pool empty", func(r, s int) bool { return r+s == 0 })
	waitLiveSlots(t, h.e.slots, 0)
	if recs := h.logs.Records("Closing a spare agent process"); len(recs) != 1 || recs[0]["reason"] != "idle timeout" {
		t.Errorf("logs of the spare's close: %v, want one for the idle timeout", recs)
	}
}

// TestReloadDropsSpares: a reload, whatever it changed, closes the spares
// started before it (their environment was built under the old config);
// the next turn starts a new one.
func TestReloadDropsSpares(t *testing.T) {
	for _, moved := range []bool{false, true} {
		name := map[bool]string{false: "same bindings", true: "workspace moved"}[moved]
		t.Run(name, func(t *testing.T) {
			h := spareHarness(t, nil)
			h.say("alice", "T1", "one")
			h.rec.waitSend(t, "echo: one")
			waitSpares(t, h.e.spare, "a spare", func(r, _ int) bool { return r == 1 })
			old := h.fa.procOf(h.fa.spawnsSnapshot()[1].SessionID)
			ws := h.ws
			if moved {
				ws = t.TempDir()
			}
			h.reload(Reload{Bindings: h.bindingsWith(func(bs []binding.Binding) []binding.Binding {
				bs[0].Workspace = ws
				return bs
			})})
			waitSpares(t, h.e.spare, "the spare dropped", func(r, s int) bool { return r+s == 0 })
			h.fa.waitFor(t, "the old spare to exit", func(*fakeAgents) bool { return !old.alive() })

			h.say("alice", "T2", "two")
			h.rec.waitSend(t, "echo: two")
			if h.fa.history(old.id) != nil {
				t.Errorf("a conversation ran on the spare of before the reload")
			}
			waitSpares(t, h.e.spare, "a spare under the new config", func(r, _ int) bool { return r == 1 })
			spawns := h.fa.spawnsSnapshot()
			if last := spawns[len(spawns)-1]; last.SessionID == "" || last.Dir != h.record("T2").Workspace {
				t.Errorf("the new spare started with %+v, want a new session in %s", last, ws)
			}
		})
	}
}

// TestShutdownClosesSpares: Run returns with every spare closed.
func TestShutdownClosesSpares(t *testing.T) {
	h := spareHarness(t, nil)
	h.say("alice", "T1", "one")
	h.rec.waitSend(t, "echo: one")
	waitSpares(t, h.e.spare, "a spare", func(r, _ int) bool { return r == 1 })
	h.stop()
	h.fa.mu.Lock()
	live := h.fa.live
	h.fa.mu.Unlock()
	if live != 0 {
		t.Errorf("%d processes live after Run returned", live)
	}
}

// TestSpareThroughTheDriver runs spares on the real agentproc driver and
// the fake claude binary: the spare's readiness is its initialize answer,
// and the next new conversation's transcript is the spare's session; one
// that refuses initialize is closed, never handed out; one still loading
// (its answer not come) is taken, and its first message waits in its stdin.
func TestSpareThroughTheDriver(t *testing.T) {
	tests := []struct {
		name, initialize string // FAKECLAUDE_INITIALIZE
		taken, ready     bool
	}{
		{name: "ready", taken: true, ready: true},
		{name: "initialize refused", initialize: "refuse"},
		{name: "still loading", initialize: "ignore", taken: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			if tt.initialize != "" {
				env["FAKECLAUDE_INITIALIZE"] = tt.initialize
			}
			h, re := newRealHarness(t, env, func(o *Options) { o.Prewarm = 1 })
			h.say("alice", "T1", "one")
			h.rec.waitSend(t, "echo: one")
			switch {
			case !tt.taken:
				h.logs.WaitRecords(t, waitLimit, "Spare agent process was not ready; closing it", 1)
				waitSpares(t, h.e.spare, "the refused spare gone", func(r, s int) bool { return r+s == 0 })
			case tt.ready:
				waitSpares(t, h.e.spare, "a ready spare", func(r, _ int) bool { return r == 1 })
			default:
				waitSpares(t, h.e.spare, "a loading spare in the pool", func(_, _ int) bool {
					return h.e.spare.Pooled(h.ws) == 1
				})
			}
			h.say("bob", "T2", "two")
			h.rec.waitSend(t, "echo: two")
			id := h.record("T2").SessionID
			taken := h.logs.Records("Taking a spare agent process")
			if !tt.taken {
				if len(taken) != 0 {
					t.Errorf("a spare that refused initialize was taken: %v", taken)
				}
				return
			}
			if len(taken) != 1 || taken[0]["session_id"] != id || taken[0]["ready"] != tt.ready {
				t.Errorf("logs of the spare taken %v, want one, ready %v, of T2's session %s", taken, tt.ready, id)
			}
			if _, _, err := agentproc.FindTranscript(re.configDir, id); err != nil {
				t.Errorf("no transcript of T2's session %s: %v", id, err)
			}
		})
	}
}

// waitLiveSlots waits until n slots are held.
func waitLiveSlots(t testing.TB, s *procs.Caps, n int) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		ch := s.Changed()
		live := s.Live()
		if live == n {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %d slots held (%d)", n, live)
		}
	}
}

// TestSparesAfterARestart: a start starts spares at once for the
// workspaces of the latest turns (agent.prewarm), before any message, so
// that the first message after a deploy runs on a ready process; the
// record of those turns names bindings and workspaces, never an agent's
// environment. Without prewarm nothing starts and nothing is written.
func TestSparesAfterARestart(t *testing.T) {
	h := spareHarness(t, func(o *Options) {
		o.Agent.Env = map[string]string{"SECRET_TOKEN": "canary-1f3e"}
	})
	h.say("alice", "T1", "one")
	h.rec.waitSend(t, "echo: one")
	waitSpares(t, h.e.spare, "a spare after the first turn", func(r, _ int) bool { return r == 1 })
	h = h.restart()
	waitSpares(t, h.e.spare, "a spare started at the start", func(r, _ int) bool { return r == 1 })
	spawned := len(h.fa.spawnsSnapshot())
	h.say("bob", "T2", "two")
	h.rec.waitSend(t, "echo: two")
	if taken := h.logs.Records("Taking a spare agent process"); len(taken) != 1 || taken[0]["session_key"] != "fake/C1/T2" {
		t.Errorf("spares taken %v, want T2 to take the one the restart started", taken)
	}
	if after := h.fa.spawnsSnapshot(); len(after) < spawned || after[spawned-1].ResumeID != "" {
		t.Errorf("the first message after the restart spawned %+v, want no process of its own", after[spawned-1:])
	}
	data, err := os.ReadFile(filepath.Join(h.opts.StateDir, "spares", "recent.json"))
	if err != nil || !strings.Contains(string(data), h.ws) || strings.Contains(string(data), "canary-1f3e") {
		t.Errorf("record of recent turns = %q, %v; want the workspace and no secret", data, err)
	}
	if fi, err := os.Stat(filepath.Join(h.opts.StateDir, "spares", "recent.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record of recent turns: %v, %v; want 0600", fi, err)
	}

	cold := newHarness(t, nil)
	cold.say("alice", "T1", "one")
	cold.rec.waitSend(t, "echo: one")
	cold = cold.restart()
	cold.waitIdle()
	if n := len(cold.fa.spawnsSnapshot()); n != 1 {
		t.Errorf("%d spawns after a restart without prewarm, want the first turn's only", n)
	}
	if _, err := os.Stat(filepath.Join(cold.opts.StateDir, "spares", "recent.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a record of recent turns without prewarm: %v", err)
	}
}
