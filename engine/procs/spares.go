package procs

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
)

// Spare processes (agent.prewarm). Starting claude costs about half a
// second (seconds on a loaded machine) before it can take a message, and in
// Slack every new thread is a new conversation. So each workspace that had
// a turn recently keeps spares: claude processes started with
// --session-id <a new uuid>, ready (they answered initialize), waiting for
// a first message. The CLI writes nothing and creates no transcript before
// it (docs/claude-code.md, "Start-up and readiness"), so a spare that is
// never used costs a process and nothing on disk.
//
// A spare is an agentSlot of its own: it holds a slot under the caps, the
// lease on its session id and the pid file beside it, exactly as a
// conversation's process does. A new conversation takes it whole
// (agentSlot.adopt): the slot, the lease and the process move, so no
// moment exists where the process is unleased or uncounted, and two
// processes never run on one session id. Spares give way: they never wait
// for a slot, a conversation at the cap closes a spare before it asks an
// idle conversation to close (acquireSlot), and they close after
// idle_timeout once their workspace's last turn is that old, on a reload,
// and at shutdown.

// spareFailPause is how long a workspace starts no spare after one failed
// to start or to become ready: a broken agent setup must not turn every
// turn's end into a spawn that fails.
const spareFailPause = time.Minute

// spareSetup is what a spare was started for: a new conversation may take
// it only when it would start its process the same way. agent is the
// engine's agent config as of the last reload (compared by identity: each
// reload renews it, see renew); how is the process's whole setup as the
// conversation whose turn asked for it would start one (its binding's agent
// config and whether it streams), so that a binding with its own model,
// prompt, arguments or environment, or another progress level, never gets
// a process started for another.
type SpareSetup struct {
	ws    string
	agent *agentproc.Config
	how   string
}

// spareHow is spareSetup.how for cfg and partial (fmt prints maps with
// their keys sorted, so equal configs read the same).
func spareHow(cfg agentproc.Config, partial bool) string {
	return fmt.Sprintf("%#v partial=%t", cfg, partial)
}

// Spare is one process kept for the next new conversation of a workspace.
type Spare struct {
	Slot  *Slot   // the process, its slot, its lease (until taken)
	proc  Process // the process, for its goroutine (slot's is cleared when taken)
	ID    string  // the session id it was started with
	setup SpareSetup
	// Tools is where the host tools it was started with (declared in its
	// initialize, before any conversation had it) send their calls: the
	// conversation that takes it sets them (turnRunner.takeSpare).
	Tools *ToolTarget
	since time.Time     // when it started, then when it became ready
	Ready bool          // it answered initialize (guarded by spares.mu)
	gone  chan struct{} // closed when it leaves the pool: taken or closed
}

// Spares is the engine's pool of spare processes. Sessions call want after
// a turn and take when they start a new Claude session; acquireSlot calls
// yield; Run calls close. Each spare has one goroutine (run) from its
// start until it leaves the pool.
type Spares struct {
	n        int           // spares per recently active workspace; 0 = none
	idle     time.Duration // 0 = never reaped
	spawn    SpawnFunc
	slots    *Caps
	stateDir string
	grace    time.Duration
	bg       context.Context
	log      *slog.Logger
	now      func() time.Time
	newID    func() string

	stop chan struct{} // closed by close
	wg   sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	agent   *agentproc.Config
	byWS    map[string]*wsSpares
	closed  bool
	changed chan struct{} // closed and replaced when a spare is ready or leaves
}

// wsSpares is one workspace's part of the pool.
type wsSpares struct {
	spares   []*Spare // started, oldest first; ready or still loading
	starting int      // spawning, not in spares yet
	lastTurn time.Time
	failedAt time.Time
}

// SparesConfig is what the pool is made with.
type SparesConfig struct {
	N        int           // spares per recently active workspace; 0 = none
	Idle     time.Duration // 0 = never reaped
	Spawn    SpawnFunc     // called at each start
	Caps     *Caps
	StateDir string
	Grace    time.Duration
	BG       context.Context
	Log      *slog.Logger
	Now      func() time.Time
	NewID    func() string // a new session id
	Agent    agentproc.Config
}

// NewSpares makes the pool; it starts nothing.
func NewSpares(c SparesConfig) *Spares {
	agent := c.Agent
	return &Spares{n: c.N, idle: c.Idle, spawn: c.Spawn, slots: c.Caps,
		stateDir: c.StateDir, grace: c.Grace, bg: c.BG, log: c.Log, now: c.Now, newID: c.NewID,
		stop: make(chan struct{}), agent: &agent, byWS: map[string]*wsSpares{}, changed: make(chan struct{})}
}

// SetupFor is what a new conversation in ws would start its process with.
func (p *Spares) SetupFor(ws string, cfg agentproc.Config, partial bool) SpareSetup {
	p.mu.Lock()
	defer p.mu.Unlock()
	return SpareSetup{ws: ws, agent: p.agent, how: spareHow(cfg, partial)}
}

// Want notes a turn in ws and starts spares until ws has n, ready or
// starting, set up as cfg and partial say (the conversation whose turn it
// was: the next new one is likely of the same binding). It returns at once:
// the start runs on the spare's goroutine.
func (p *Spares) Want(ws string, cfg agentproc.Config, partial bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n <= 0 || p.closed {
		return
	}
	w := p.byWS[ws]
	if w == nil {
		w = &wsSpares{}
		p.byWS[ws] = w
	}
	w.lastTurn = p.now()
	if !w.failedAt.IsZero() && p.now().Sub(w.failedAt) < spareFailPause {
		return
	}
	setup := SpareSetup{ws: ws, agent: p.agent, how: spareHow(cfg, partial)}
	for have := len(w.spares) + w.starting; have < p.n; have++ {
		// A spare never waits for a slot: at a full cap none starts.
		if ok, _, _ := p.slots.TryAcquire(ws); !ok {
			return
		}
		w.starting++
		p.wg.Add(1)
		go p.run(setup, cfg, partial)
	}
}

// Take hands over a spare of ws started for setup, or nil: a ready one
// if any, else one still loading (started before this conversation asked,
// it answers sooner than a process started now would; its first message
// waits in its stdin). The caller adopts sp.slot: the process, its slot
// and its lease are then its.
func (p *Spares) Take(setup SpareSetup) *Spare {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.byWS[setup.ws]
	if w == nil {
		return nil
	}
	var pick *Spare
	for _, sp := range w.spares {
		if sp.setup != setup || !Alive(sp.proc) {
			continue // its goroutine closes it
		}
		if pick == nil || sp.Ready && !pick.Ready {
			pick = sp
		}
	}
	if pick != nil {
		p.removeLocked(pick)
	}
	return pick
}

// Yield closes one spare, of ws when ws is set (its cap is the full
// one), else the oldest of any workspace, so that a conversation gets its
// slot. It reports whether it closed one; the slot frees up when the
// process has exited (slots.release wakes the waiter).
func (p *Spares) Yield(ws string) bool {
	p.mu.Lock()
	var victim *Spare
	for name, w := range p.byWS {
		if ws != "" && name != ws {
			continue
		}
		for _, sp := range w.spares {
			if victim == nil || sp.since.Before(victim.since) {
				victim = sp
			}
		}
	}
	if victim == nil {
		p.mu.Unlock()
		return false
	}
	p.removeLocked(victim)
	p.wg.Add(1) // under the lock, so that close waits for it
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		p.log.Info("Closing a spare agent process: a conversation needs its slot", "workspace", victim.setup.ws, "session_id", victim.ID)
		victim.Slot.Close()
	}()
	return true
}

// Renew closes every spare and makes those still spawning close once
// started; later spares start with agent. A reload calls it: the agent's
// environment is built at the spawn from settings a reload may change
// (the variables kept from every agent child, the bindings), and a spare
// started before must not carry the old ones into a conversation.
func (p *Spares) Renew(agent *agentproc.Config) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.agent = agent
	var drop []*Spare
	for _, w := range p.byWS {
		drop = append(drop, w.spares...)
	}
	for _, sp := range drop {
		p.removeLocked(sp)
		p.log.Info("Closing a spare agent process: the configuration was reloaded", "workspace", sp.setup.ws, "session_id", sp.ID)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			sp.Slot.Close()
		}()
	}
}

// Changed is closed at the pool's next change: a spare ready, or gone.
func (p *Spares) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// Pooled is the number of spares of ws in the pool, ready or loading
// (started, its handshake not answered), not those still spawning.
func (p *Spares) Pooled(ws string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w := p.byWS[ws]; w != nil {
		return len(w.spares)
	}
	return 0
}

// On reports whether spares are kept at all (agent.prewarm > 0).
func (p *Spares) On() bool { return p.n > 0 }

// Count is the number of spares ready, and of those starting (spawning
// or loading).
func (p *Spares) Count() (ready, starting int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.byWS {
		starting += w.starting
		for _, sp := range w.spares {
			if sp.Ready {
				ready++
			} else {
				starting++
			}
		}
	}
	return ready, starting
}

// Close stops starting spares and closes every one; it returns when all
// have exited.
func (p *Spares) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return
	}
	p.closed = true
	close(p.stop)
	var all []*Spare
	for _, w := range p.byWS {
		all = append(all, w.spares...)
	}
	for _, sp := range all {
		p.removeLocked(sp)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, sp := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sp.Slot.Close()
		}()
	}
	wg.Wait()
	p.wg.Wait()
}

// removeLocked takes sp out of the pool; whoever removes it closes it (or,
// for take, owns it).
func (p *Spares) removeLocked(sp *Spare) {
	w := p.byWS[sp.setup.ws]
	if w == nil {
		return
	}
	for i, r := range w.spares {
		if r == sp {
			w.spares = append(w.spares[:i:i], w.spares[i+1:]...)
			close(sp.gone)
			p.notifyLocked()
			return
		}
	}
}

func (p *Spares) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// run is a spare's goroutine: it starts the process in the slot want
// took, puts it in the pool, waits for it to be ready, then keeps it until
// it is taken, dies, idles out, or the pool closes.
func (p *Spares) run(setup SpareSetup, cfg agentproc.Config, partial bool) {
	defer p.wg.Done()
	sp := p.start(setup, cfg, partial)
	p.mu.Lock()
	w := p.byWS[setup.ws]
	w.starting--
	drop := sp != nil && (p.closed || setup.agent != p.agent)
	if sp != nil && !drop {
		w.spares = append(w.spares, sp)
	}
	p.notifyLocked()
	p.mu.Unlock()
	if sp == nil {
		return
	}
	if drop {
		sp.Slot.Close()
		return
	}
	if !p.awaitReady(sp) {
		return
	}
	p.keep(sp)
}

// start starts a spare for setup in the slot want took; nil when it did
// not start (the slot is freed, and the workspace pauses).
func (p *Spares) start(setup SpareSetup, cfg agentproc.Config, partial bool) *Spare {
	id := p.newID()
	tools := &ToolTarget{}
	// agentproc names the session itself once the CLI has one.
	log := p.log.With("workspace", setup.ws)
	slot := NewSlot(SlotConfig{Dir: setup.ws, StateDir: p.stateDir, Grace: p.grace, Caps: p.slots, BG: p.bg, Log: log, Now: p.now})
	opts := agentproc.StartOptions{Dir: setup.ws, SessionID: id, PartialMessages: partial, Tools: tools.HostTools()}
	if err := slot.Start(p.spawn, cfg, opts); err != nil {
		p.slots.Release(setup.ws)
		p.mu.Lock()
		p.byWS[setup.ws].failedAt = p.now()
		p.mu.Unlock()
		p.log.Warn("Spare agent process did not start", "workspace", setup.ws, "error", err)
		return nil
	}
	return &Spare{Slot: slot, proc: slot.Live(), ID: id, setup: setup, Tools: tools, since: p.now(), gone: make(chan struct{})}
}

// awaitReady waits for sp's start-up handshake while it is in the pool.
// It reports whether sp is ready and still the pool's: false when it was
// taken meanwhile (the taker waits no more than the CLI does), closed by
// whoever removed it, or failed (then it is closed here and the workspace
// pauses).
func (p *Spares) awaitReady(sp *Spare) bool {
	var err error
	if r, ok := sp.proc.(readier); ok {
		select {
		case <-r.Ready():
			_, err = r.WaitReady(p.bg)
		case <-sp.gone:
			return false
		}
	}
	p.mu.Lock()
	select {
	case <-sp.gone:
		p.mu.Unlock()
		return false
	default:
	}
	if err != nil {
		p.removeLocked(sp)
		p.byWS[sp.setup.ws].failedAt = p.now()
	} else {
		sp.Ready, sp.since = true, p.now()
		p.notifyLocked()
	}
	p.mu.Unlock()
	if err != nil {
		p.log.Warn("Spare agent process was not ready; closing it", "workspace", sp.setup.ws, "session_id", sp.ID, "error", err)
		sp.Slot.Close()
		return false
	}
	p.log.Info("Spare agent process ready", "workspace", sp.setup.ws, "session_id", sp.ID)
	p.slots.Signal() // a conversation waiting at the cap may now close it
	return true
}

// keep holds a ready spare until it leaves the pool.
func (p *Spares) keep(sp *Spare) {
	proc := sp.proc
	for {
		var timeout <-chan time.Time
		var timer *time.Timer
		if p.idle > 0 {
			p.mu.Lock()
			left := p.idle - p.now().Sub(p.idleFromLocked(sp))
			p.mu.Unlock()
			timer = time.NewTimer(max(0, left))
			timeout = timer.C
		}
		why := ""
		select {
		case <-sp.gone:
		case <-proc.Done():
			why = "it exited"
		case <-timeout:
			why = "idle timeout"
		case <-p.stop:
		}
		if timer != nil {
			timer.Stop()
		}
		if why == "" {
			return // taken, or closed by whoever removed it
		}
		p.mu.Lock()
		owned := false
		select {
		case <-sp.gone:
		default:
			if why == "idle timeout" && p.now().Sub(p.idleFromLocked(sp)) < p.idle {
				p.mu.Unlock()
				continue // the workspace had a turn since: keep it longer
			}
			p.removeLocked(sp)
			owned = true
		}
		p.mu.Unlock()
		if !owned {
			return
		}
		if why == "it exited" {
			p.log.Warn("Spare agent process exited unused", "workspace", sp.setup.ws, "session_id", sp.ID,
				"stderr", lastLine(proc.StderrTail()))
		} else {
			p.log.Info("Closing a spare agent process", "reason", why, "workspace", sp.setup.ws, "session_id", sp.ID)
		}
		sp.Slot.Close()
		return
	}
}

// idleFromLocked is when sp's idle time counts from: it became ready, or
// its workspace's last turn, whichever is later.
func (p *Spares) idleFromLocked(sp *Spare) time.Time {
	from := sp.since
	if w := p.byWS[sp.setup.ws]; w != nil && w.lastTurn.After(from) {
		from = w.lastTurn
	}
	return from
}

// readier is a process that reports its start-up handshake
// (*agentproc.Process); one without it is ready once started.
type readier interface {
	Ready() <-chan struct{}
	WaitReady(ctx context.Context) (*agentproc.InitInfo, error)
}

var _ readier = realProcess{}

func Alive(p Process) bool {
	if p == nil {
		return false
	}
	select {
	case <-p.Done():
		return false
	default:
		return true
	}
}

// Adopt makes from's process, slot and lease this slot's: a spare taken
// by a new conversation. The slot must hold no process.
func (a *Slot) Adopt(from *Slot) {
	from.mu.Lock()
	proc, l, id := from.proc, from.lease, from.leaseID
	from.proc, from.lease, from.leaseID = nil, nil, ""
	from.mu.Unlock()
	a.Release() // a lease recovery took without a process, if any
	a.mu.Lock()
	a.proc, a.lease, a.leaseID, a.idleAt = proc, l, id, a.now()
	a.mu.Unlock()
}
