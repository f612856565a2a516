package procs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
)

// waitLimit bounds every wait of these tests.
const waitLimit = 30 * time.Second

// waitSpares waits until the pool's ready and starting counts satisfy pred.
func waitSpares(t *testing.T, p *Spares, what string, pred func(ready, starting int) bool) {
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

// gatedAgents starts fake processes that are ready when the test says, or
// fail their start-up handshake.
type gatedAgents struct {
	mu      sync.Mutex
	gates   []*gatedProc
	live    int
	ids     int
	added   chan struct{} // closed and replaced when a process starts
	changed chan struct{} // closed and replaced when one exits
}

// gatedProc is a fake claude process: it runs no turn, it only lives, gets
// ready (or fails to) and exits.
type gatedProc struct {
	g     *gatedAgents
	opts  agentproc.StartOptions
	ready chan struct{}
	err   error
	done  chan struct{}
	once  sync.Once
}

func (p *gatedProc) StartTurn(context.Context, agentproc.UserMessage) (Turn, error) {
	return nil, errors.New("a spare runs no turn here")
}
func (p *gatedProc) Interrupt(context.Context) error { return nil }
func (p *gatedProc) RespondPermission(context.Context, string, agentproc.PermissionDecision) error {
	return nil
}
func (p *gatedProc) Close(context.Context) error { p.exit(); return nil }
func (p *gatedProc) Done() <-chan struct{}       { return p.done }
func (p *gatedProc) SessionID() string           { return p.opts.SessionID }
func (p *gatedProc) StderrTail() string          { return "" }
func (p *gatedProc) Pid() int                    { return 0 } // no pid file is written for it
func (p *gatedProc) Ready() <-chan struct{}      { return p.ready }

func (p *gatedProc) WaitReady(ctx context.Context) (*agentproc.InitInfo, error) {
	select {
	case <-p.ready:
		return &agentproc.InitInfo{SessionState: "idle"}, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *gatedProc) exit() {
	p.once.Do(func() {
		close(p.done)
		p.g.mu.Lock()
		p.g.live--
		close(p.g.changed)
		p.g.changed = make(chan struct{})
		p.g.mu.Unlock()
	})
}

func (p *gatedProc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (g *gatedAgents) spawn(_ context.Context, _ agentproc.Config, opts agentproc.StartOptions, _ *slog.Logger) (Process, error) {
	gp := &gatedProc{g: g, opts: opts, ready: make(chan struct{}), done: make(chan struct{})}
	g.mu.Lock()
	g.gates = append(g.gates, gp)
	g.live++
	close(g.added)
	g.added = make(chan struct{})
	g.mu.Unlock()
	return gp, nil
}

func (g *gatedAgents) newID() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ids++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", g.ids)
}

// nth waits for the nth spawn (from 1).
func (g *gatedAgents) nth(t *testing.T, n int) *gatedProc {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
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
		case <-deadline.C:
			t.Fatalf("no spawn #%d", n)
		}
	}
}

// waitLive waits until n fake processes live.
func (g *gatedAgents) waitLive(t *testing.T, n int) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		live, ch := g.live, g.changed
		g.mu.Unlock()
		if live == n {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %d live processes (%d)", n, live)
		}
	}
}

// newTestSpares is a pool alone, over gated fake agents.
func newTestSpares(t *testing.T, n, max int) (*Spares, *gatedAgents) {
	t.Helper()
	g := &gatedAgents{added: make(chan struct{}), changed: make(chan struct{})}
	bg, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := &Spares{n: n, spawn: g.spawn, slots: NewCaps(max, 0), stateDir: t.TempDir(), grace: time.Second,
		bg: bg, log: slog.New(slog.DiscardHandler), now: time.Now, newID: g.newID,
		stop: make(chan struct{}), agent: &agentproc.Config{}, byWS: map[string]*wsSpares{}, changed: make(chan struct{})}
	t.Cleanup(p.Close)
	return p, g
}

// TestSpareReadiness: a spare still loading is handed out only when no
// ready one is there; one that fails its handshake is closed, frees its
// slot, and the workspace starts no other for a while.
func TestSpareReadiness(t *testing.T) {
	p, g := newTestSpares(t, 1, 0)
	const ws = "/ws"
	p.Want(ws, agentproc.Config{}, false)
	loading := g.nth(t, 1)
	p.Want(ws, agentproc.Config{}, false) // one is starting: no second
	if r, s := p.Count(); r != 0 || s != 1 {
		t.Fatalf("ready %d, starting %d; want one starting", r, s)
	}
	waitSpares(t, p, "the spare in the pool", func(_, _ int) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.byWS[ws].spares) == 1
	})
	sp := p.Take(p.SetupFor(ws, agentproc.Config{}, false))
	if sp == nil || sp.proc != Process(loading) || sp.Ready {
		t.Fatalf("took %+v, want the loading spare", sp)
	}
	sp.Slot.Close()
	waitSlots(t, p.slots, 0)

	p.Want(ws, agentproc.Config{}, false)
	failing := g.nth(t, 2)
	failing.err = &agentproc.ControlError{Subtype: "initialize", Message: "refused"}
	close(failing.ready)
	waitSpares(t, p, "the failed spare gone", func(r, s int) bool { return r+s == 0 })
	waitSlots(t, p.slots, 0)
	if failing.alive() {
		t.Error("the spare that failed its handshake still runs")
	}
	p.Want(ws, agentproc.Config{}, false)
	if r, s := p.Count(); r+s != 0 {
		t.Errorf("a spare started right after one failed (ready %d, starting %d)", r, s)
	}

	// After the pause, a good one, preferred once ready.
	p.mu.Lock()
	p.byWS[ws].failedAt = time.Now().Add(-spareFailPause)
	p.mu.Unlock()
	p.Want(ws, agentproc.Config{}, false)
	good := g.nth(t, 3)
	close(good.ready)
	waitSpares(t, p, "a ready spare", func(r, _ int) bool { return r == 1 })
	if p.Take(p.SetupFor("/other", agentproc.Config{}, false)) != nil {
		t.Error("a spare of another workspace was handed out")
	}
	sp = p.Take(p.SetupFor(ws, agentproc.Config{}, false))
	if sp == nil || sp.proc != Process(good) || !sp.Ready || sp.ID != good.opts.SessionID {
		t.Fatalf("took %+v, want the ready spare", sp)
	}
	if p.Take(p.SetupFor(ws, agentproc.Config{}, false)) != nil {
		t.Error("one spare handed out twice")
	}
	sp.Slot.Close()
}

// TestSpareRenew: renew closes the ready spares and one still spawning
// once it started, and later spares start with the new config.
func TestSpareRenew(t *testing.T) {
	p, g := newTestSpares(t, 1, 0)
	p.Want("/a", agentproc.Config{}, false)
	a := g.nth(t, 1)
	close(a.ready)
	waitSpares(t, p, "a ready spare", func(r, _ int) bool { return r == 1 })
	p.Want("/b", agentproc.Config{}, false)
	b := g.nth(t, 2)

	p.Renew(&agentproc.Config{Model: "opus"})
	close(b.ready)
	waitSpares(t, p, "both spares dropped", func(r, s int) bool { return r+s == 0 })
	g.waitLive(t, 0)
	if p.Take(p.SetupFor("/a", agentproc.Config{}, false)) != nil || p.Take(p.SetupFor("/b", agentproc.Config{}, false)) != nil {
		t.Error("a spare of the old config was handed out")
	}
	p.Want("/a", agentproc.Config{}, false)
	c := g.nth(t, 3)
	close(c.ready)
	waitSpares(t, p, "a spare of the new config", func(r, _ int) bool { return r == 1 })
	if sp := p.Take(p.SetupFor("/a", agentproc.Config{}, false)); sp == nil || sp.setup.agent.Model != "opus" {
		t.Errorf("took %+v, want the spare of the new config", sp)
	}
}

// TestSpareWaitsForNoSlot: a spare never waits for a slot: at a full cap
// nothing starts.
func TestSpareWaitsForNoSlot(t *testing.T) {
	p, g := newTestSpares(t, 1, 1)
	if ok, _, _ := p.slots.TryAcquire("/ws"); !ok {
		t.Fatal("no slot for the test's own process")
	}
	p.Want("/ws", agentproc.Config{}, false)
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
	p.Want("/ws", agentproc.Config{}, false)
	a := g.nth(t, 1)
	close(a.ready)
	waitSpares(t, p, "a ready spare", func(r, _ int) bool { return r == 1 })
	a.exit()
	waitSpares(t, p, "the dead spare dropped", func(r, s int) bool { return r+s == 0 })
	waitSlots(t, p.slots, 0)
}

// waitSlots waits until n slots are held.
func waitSlots(t *testing.T, s *Caps, n int) {
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

// TestSparesUpToPrewarm: a workspace gets prewarm spares, started at once,
// and no more however many turns it has; a full cap stops the count short.
func TestSparesUpToPrewarm(t *testing.T) {
	p, g := newTestSpares(t, 2, 3)
	p.Want("/ws", agentproc.Config{}, false)
	p.Want("/ws", agentproc.Config{}, false)
	close(g.nth(t, 1).ready)
	close(g.nth(t, 2).ready)
	waitSpares(t, p, "two ready spares", func(r, _ int) bool { return r == 2 })
	p.Want("/ws", agentproc.Config{}, false)
	p.Want("/other", agentproc.Config{}, false) // one slot left of 3: one spare, not two
	close(g.nth(t, 3).ready)
	waitSpares(t, p, "three ready spares", func(r, _ int) bool { return r == 3 })
	g.mu.Lock()
	n := len(g.gates)
	g.mu.Unlock()
	if n != 3 {
		t.Errorf("%d spawns, want 2 for /ws and 1 for /other at the cap of 3", n)
	}
	if p.slots.Live() != 3 {
		t.Errorf("%d slots held, want one per spare", p.slots.Live())
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
	p.Want(ws, opus, true)
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
		if p.Take(p.SetupFor(ws, other.cfg, other.partial)) != nil {
			t.Errorf("%s: took a spare started for another setup", other.name)
		}
	}
	same := agentproc.Config{Model: "opus", Env: map[string]string{"A": "1", "B": "2"}}
	sp := p.Take(p.SetupFor(ws, same, true))
	if sp == nil {
		t.Fatal("the spare was not handed to a conversation of its own setup")
	}
	var got string
	sp.Tools.Set([]agentproc.HostTool{{Name: "send_file", Call: func(_ context.Context, args json.RawMessage) (string, error) {
		got = string(args)
		return "sent", nil
	}}})
	if out, err := sp1.opts.Tools[0].Call(context.Background(), json.RawMessage(`{"path":"a"}`)); err != nil || out != "sent" || got != `{"path":"a"}` {
		t.Errorf("call after the take = %q, %v (conversation got %q); want it served by the conversation's tool", out, err, got)
	}
	sp.Slot.Close()
}
