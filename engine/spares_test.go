package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/lease"
)

// waitSpares waits until the pool's ready and starting counts satisfy pred.
func waitSpares(t *testing.T, p *spares, what string, pred func(ready, starting int) bool) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		if pred(p.count()) {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			r, s := p.count()
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

func (h *harness) record(thread string) record {
	h.t.Helper()
	h.e.mu.Lock()
	s := h.e.sessions["fake/C1/"+thread]
	h.e.mu.Unlock()
	if s == nil {
		h.t.Fatalf("no session for thread %s", thread)
	}
	return s.rb.get()
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
	if r, s := h.e.spare.count(); r+s != 1 {
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
	if r, _ := h.e.spare.count(); r != 1 {
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
	if r, s := h.e.spare.count(); r+s != 0 {
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
	waitSlots(t, h.e.slots, 0)
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
			h.reload(Reload{Bindings: h.bindingsWith(func(bs []Binding) []Binding {
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

// gatedAgents wraps the fake agents with the start-up handshake: each
// process is ready when the test says, or fails it.
type gatedAgents struct {
	fa    *fakeAgents
	mu    sync.Mutex
	gates []*gatedProc
	added chan struct{}
}

type gatedProc struct {
	*fakeProc
	ready chan struct{}
	err   error
}

func (g *gatedProc) Ready() <-chan struct{} { return g.ready }

func (g *gatedProc) WaitReady(ctx context.Context) (*agentproc.InitInfo, error) {
	select {
	case <-g.ready:
		return &agentproc.InitInfo{PID: g.pid, SessionState: "idle"}, g.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *gatedAgents) spawn(ctx context.Context, cfg agentproc.Config, opts agentproc.StartOptions, log *slog.Logger) (agentProcess, error) {
	p, err := g.fa.spawn(ctx, cfg, opts, log)
	if err != nil {
		return nil, err
	}
	gp := &gatedProc{fakeProc: p.(*fakeProc), ready: make(chan struct{})}
	g.mu.Lock()
	g.gates = append(g.gates, gp)
	close(g.added)
	g.added = make(chan struct{})
	g.mu.Unlock()
	return gp, nil
}

// next waits for the nth spawn (from 1).
func (g *gatedAgents) nth(t *testing.T, n int) *gatedProc {
	t.Helper()
	for {
		g.mu.Lock()
		if len(g.gates) >= n {
			gp := g.gates[n-1]
			g.mu.Unlock()
			return gp
		}
		ch := g.added
		g.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(waitLimit):
			t.Fatalf("no spawn #%d", n)
		}
	}
}

// newTestSpares is a pool alone, over gated fake agents.
func newTestSpares(t *testing.T, n, max int) (*spares, *gatedAgents) {
	t.Helper()
	g := &gatedAgents{fa: newFakeAgents(), added: make(chan struct{})}
	g.fa.chosenIDs = true
	bg, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := &spares{n: n, spawn: g.spawn, slots: newSlots(max, 0), stateDir: t.TempDir(), grace: time.Second,
		bg: bg, log: slog.New(slog.DiscardHandler), now: time.Now, newID: newUUID,
		stop: make(chan struct{}), agent: &agentproc.Config{}, byWS: map[string]*wsSpares{}, changed: make(chan struct{})}
	t.Cleanup(p.close)
	return p, g
}

// TestSpareReadiness: a spare still loading is handed out only when no
// ready one is there; one that fails its handshake is closed, frees its
// slot, and the workspace starts no other for a while.
func TestSpareReadiness(t *testing.T) {
	p, g := newTestSpares(t, 1, 0)
	const ws = "/ws"
	p.want(ws, agentproc.Config{}, false)
	loading := g.nth(t, 1)
	p.want(ws, agentproc.Config{}, false) // one is starting: no second
	if r, s := p.count(); r != 0 || s != 1 {
		t.Fatalf("ready %d, starting %d; want one starting", r, s)
	}
	waitSpares(t, p, "the spare in the pool", func(_, _ int) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.byWS[ws].spares) == 1
	})
	sp := p.take(p.setupFor(ws, agentproc.Config{}, false))
	if sp == nil || sp.proc != agentProcess(loading) || sp.ready {
		t.Fatalf("took %+v, want the loading spare", sp)
	}
	sp.slot.close()
	waitSlots(t, p.slots, 0)

	p.want(ws, agentproc.Config{}, false)
	failing := g.nth(t, 2)
	failing.err = &agentproc.ControlError{Subtype: "initialize", Message: "refused"}
	close(failing.ready)
	waitSpares(t, p, "the failed spare gone", func(r, s int) bool { return r+s == 0 })
	waitSlots(t, p.slots, 0)
	if failing.alive() {
		t.Error("the spare that failed its handshake still runs")
	}
	p.want(ws, agentproc.Config{}, false)
	if r, s := p.count(); r+s != 0 {
		t.Errorf("a spare started right after one failed (ready %d, starting %d)", r, s)
	}

	// After the pause, a good one, preferred once ready.
	p.mu.Lock()
	p.byWS[ws].failedAt = time.Now().Add(-spareFailPause)
	p.mu.Unlock()
	p.want(ws, agentproc.Config{}, false)
	good := g.nth(t, 3)
	close(good.ready)
	waitSpares(t, p, "a ready spare", func(r, _ int) bool { return r == 1 })
	if p.take(p.setupFor("/other", agentproc.Config{}, false)) != nil {
		t.Error("a spare of another workspace was handed out")
	}
	sp = p.take(p.setupFor(ws, agentproc.Config{}, false))
	if sp == nil || sp.proc != agentProcess(good) || !sp.ready || sp.id != good.opts.SessionID {
		t.Fatalf("took %+v, want the ready spare", sp)
	}
	if p.take(p.setupFor(ws, agentproc.Config{}, false)) != nil {
		t.Error("one spare handed out twice")
	}
	sp.slot.close()
}

// TestSpareRenew: renew closes the ready spares and one still spawning
// once it started, and later spares start with the new config.
func TestSpareRenew(t *testing.T) {
	p, g := newTestSpares(t, 1, 0)
	p.want("/a", agentproc.Config{}, false)
	a := g.nth(t, 1)
	close(a.ready)
	waitSpares(t, p, "a ready spare", func(r, _ int) bool { return r == 1 })
	p.want("/b", agentproc.Config{}, false)
	b := g.nth(t, 2)

	p.renew(&agentproc.Config{Model: "opus"})
	close(b.ready)
	waitSpares(t, p, "both spares dropped", func(r, s int) bool { return r+s == 0 })
	g.fa.waitFor(t, "both spares to exit", func(fa *fakeAgents) bool { return fa.live == 0 })
	if p.take(p.setupFor("/a", agentproc.Config{}, false)) != nil || p.take(p.setupFor("/b", agentproc.Config{}, false)) != nil {
		t.Error("a spare of the old config was handed out")
	}
	p.want("/a", agentproc.Config{}, false)
	c := g.nth(t, 3)
	close(c.ready)
	waitSpares(t, p, "a spare of the new config", func(r, _ int) bool { return r == 1 })
	if sp := p.take(p.setupFor("/a", agentproc.Config{}, false)); sp == nil || sp.setup.agent.Model != "opus" {
		t.Errorf("took %+v, want the spare of the new config", sp)
	}
}

// TestSpareWaitsForNoSlot: a spare never waits for a slot: at a full cap
// nothing starts.
func TestSpareWaitsForNoSlot(t *testing.T) {
	p, g := newTestSpares(t, 1, 1)
	if ok, _, _ := p.slots.tryAcquire("/ws"); !ok {
		t.Fatal("no slot for the test's own process")
	}
	p.want("/ws", agentproc.Config{}, false)
	waitSpares(t, p, "the start given up", func(r, s int) bool { return r+s == 0 })
	g.mu.Lock()
	n := len(g.gates)
	g.mu.Unlock()
	if n != 0 {
		t.Errorf("%d spawns at a full cap", n)
	}
}

// TestSpareExitsUnused: a spare that dies is dropped and its slot freed.
func TestSpareExitsUnused(t *testing.T) {
	p, g := newTestSpares(t, 1, 0)
	p.want("/ws", agentproc.Config{}, false)
	a := g.nth(t, 1)
	close(a.ready)
	waitSpares(t, p, "a ready spare", func(r, _ int) bool { return r == 1 })
	a.exit()
	waitSpares(t, p, "the dead spare dropped", func(r, s int) bool { return r+s == 0 })
	waitSlots(t, p.slots, 0)
}

// waitSlots waits until n slots are held.
func waitSlots(t *testing.T, s *slots, n int) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		live, ch := s.total, s.changed
		s.mu.Unlock()
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
					h.e.spare.mu.Lock()
					defer h.e.spare.mu.Unlock()
					w := h.e.spare.byWS[h.ws]
					return w != nil && len(w.spares) == 1
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

// TestSparesUpToPrewarm: a workspace gets prewarm spares, started at once,
// and no more however many turns it has; a full cap stops the count short.
func TestSparesUpToPrewarm(t *testing.T) {
	p, g := newTestSpares(t, 2, 3)
	p.want("/ws", agentproc.Config{}, false)
	p.want("/ws", agentproc.Config{}, false)
	close(g.nth(t, 1).ready)
	close(g.nth(t, 2).ready)
	waitSpares(t, p, "two ready spares", func(r, _ int) bool { return r == 2 })
	p.want("/ws", agentproc.Config{}, false)
	p.want("/other", agentproc.Config{}, false) // one slot left of 3: one spare, not two
	close(g.nth(t, 3).ready)
	waitSpares(t, p, "three ready spares", func(r, _ int) bool { return r == 3 })
	g.mu.Lock()
	n := len(g.gates)
	g.mu.Unlock()
	if n != 3 {
		t.Errorf("%d spawns, want 2 for /ws and 1 for /other at the cap of 3", n)
	}
	if p.slots.live() != 3 {
		t.Errorf("%d slots held, want one per spare", p.slots.live())
	}
}

// TestSpareServesOnlyItsSetup: a spare started for one binding's setup (its
// agent config, whether it streams) is never handed to a conversation that
// would start its process otherwise; and the host tools it declared at its
// start call the conversation that took it, not nothing.
func TestSpareServesOnlyItsSetup(t *testing.T) {
	p, g := newTestSpares(t, 1, 0)
	const ws = "/ws"
	opus := agentproc.Config{Model: "opus", Env: map[string]string{"B": "2", "A": "1"}}
	p.want(ws, opus, true)
	sp1 := g.nth(t, 1)
	close(sp1.ready)
	waitSpares(t, p, "a ready spare", func(r, _ int) bool { return r == 1 })
	if n := len(sp1.opts.Tools); n != 1 || sp1.opts.Tools[0].Name != "send_file" || !sp1.opts.PartialMessages {
		t.Fatalf("spare started with tools %v, partial %v; want send_file and partial messages", sp1.opts.Tools, sp1.opts.PartialMessages)
	}
	if _, err := sp1.opts.Tools[0].Call(context.Background(), nil); !errors.Is(err, errNoConversation) {
		t.Errorf("a call before any conversation took the spare = %v, want errNoConversation", err)
	}
	for _, other := range []struct {
		name    string
		cfg     agentproc.Config
		partial bool
	}{
		{"another model", agentproc.Config{Model: "sonnet", Env: opus.Env}, true},
		{"another environment", agentproc.Config{Model: "opus", Env: map[string]string{"A": "1"}}, true},
		{"no streaming", opus, false},
		{"the engine's defaults", agentproc.Config{}, false},
	} {
		if p.take(p.setupFor(ws, other.cfg, other.partial)) != nil {
			t.Errorf("%s: took a spare started for another setup", other.name)
		}
	}
	same := agentproc.Config{Model: "opus", Env: map[string]string{"A": "1", "B": "2"}}
	sp := p.take(p.setupFor(ws, same, true))
	if sp == nil {
		t.Fatal("the spare was not handed to a conversation of its own setup")
	}
	var got string
	sp.tools.set([]agentproc.HostTool{{Name: "send_file", Call: func(_ context.Context, args json.RawMessage) (string, error) {
		got = string(args)
		return "sent", nil
	}}})
	if out, err := sp1.opts.Tools[0].Call(context.Background(), json.RawMessage(`{"path":"a"}`)); err != nil || out != "sent" || got != `{"path":"a"}` {
		t.Errorf("call after the take = %q, %v (conversation got %q); want it served by the conversation's tool", out, err, got)
	}
	sp.slot.close()
}
