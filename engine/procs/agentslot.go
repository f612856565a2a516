package procs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/lease"
	"github.com/cc-connect/cc-connect/workspace"
)

// agentSlot is a conversation's live claude process and what it holds: a
// slot under the process caps (slots.go), and the session lease with the
// pid file beside it (lease.go). Only the session goroutine starts or
// closes the process; any goroutine may look at it.
type Slot struct {
	ws       string        // the workspace folder the process runs in
	stateDir string        // for the lease and the pid file
	grace    time.Duration // Close is bounded by twice this
	slots    *Caps
	bg       context.Context
	log      *slog.Logger
	now      func() time.Time

	mu      sync.Mutex // guards the fields below
	proc    Process
	idleAt  time.Time // when the live process last finished a turn
	lease   *lease.Lock
	leaseID string // the Claude session leased, "" when none
}

// SlotConfig is what a Slot is made with.
type SlotConfig struct {
	Dir      string        // the workspace folder the process runs in
	StateDir string        // for the lease and the pid file
	Grace    time.Duration // Close is bounded by twice this
	Caps     *Caps
	BG       context.Context // outlives the process
	Log      *slog.Logger
	Now      func() time.Time
}

// NewSlot makes a Slot without a process; it starts nothing.
func NewSlot(c SlotConfig) *Slot {
	return &Slot{ws: c.Dir, stateDir: c.StateDir, grace: c.Grace, slots: c.Caps, bg: c.BG, log: c.Log, now: c.Now}
}

// SetDir points the slot at another workspace folder (a conversation
// moved into its worktree); call it only while no process runs.
func (a *Slot) SetDir(ws string) { a.ws = ws }

// Live is the live process, or nil.
func (a *Slot) Live() Process {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.proc
}

// IdleSince is when the live process went idle; false without one.
func (a *Slot) IdleSince() (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.idleAt, a.proc != nil
}

// MarkIdle notes that the process finished a turn now.
func (a *Slot) MarkIdle() {
	a.mu.Lock()
	a.idleAt = a.now()
	a.mu.Unlock()
}

// Start takes the lease on the Claude session opts runs (resumed or
// chosen), then gets the process from spawn, the one place a process comes
// from, and records its pid beside the lease. The caller holds a slot; on
// an error the lease is released and the slot is the caller's to free.
func (a *Slot) Start(spawn SpawnFunc, cfg agentproc.Config, opts agentproc.StartOptions) error {
	if err := a.Claim(orDefault(opts.ResumeID, opts.SessionID)); err != nil {
		return err
	}
	p, err := spawn(a.bg, cfg, opts, a.log)
	if err != nil {
		a.Release()
		return fmt.Errorf("starting agent in %s: %w", a.ws, err)
	}
	a.markAgent(p.Pid())
	a.mu.Lock()
	a.proc, a.idleAt = p, a.now()
	a.mu.Unlock()
	return nil
}

// Close closes the live process, if any, and frees its slot.
func (a *Slot) Close() {
	a.mu.Lock()
	proc := a.proc
	a.proc = nil
	a.mu.Unlock()
	if proc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(a.bg, 2*a.grace)
	defer cancel()
	if err := proc.Close(ctx); err != nil && !errors.Is(err, context.Canceled) {
		a.log.Debug("Agent process closed with error", "error", err)
	}
	select {
	case <-proc.Done():
		a.Release()
	default:
		// Close gave up on a process that still runs: keeping the lease
		// (and its pid file) stops another process on its session.
		a.log.Error("Agent process outlived Close; its session stays leased", "session_id", a.Leased(), "pid", proc.Pid())
	}
	a.slots.Release(a.ws)
}

func (a *Slot) Leased() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.leaseID
}

// Claim takes the session lease for id and clears an orphaned claude
// process left on it by a cc-connect that died. It is a no-op when the
// lease on id is held already.
func (a *Slot) Claim(id string) error {
	a.mu.Lock()
	held, heldID := a.lease, a.leaseID
	a.mu.Unlock()
	if held != nil && heldID == id {
		return nil
	}
	a.Release()
	l, err := lease.Session(a.stateDir, id)
	if err != nil {
		return fmt.Errorf("claiming claude session %s: %w", id, err)
	}
	if err := killOrphanAgent(MarkPath(a.stateDir, id), a.log); err != nil {
		_ = l.Release()
		return fmt.Errorf("claiming claude session %s: %w", id, err)
	}
	a.mu.Lock()
	a.lease, a.leaseID = l, id
	a.mu.Unlock()
	return nil
}

// Release drops the session lease, if held. Call it only once the process
// on the session has exited.
func (a *Slot) Release() {
	a.mu.Lock()
	l, id := a.lease, a.leaseID
	a.lease, a.leaseID = nil, ""
	a.mu.Unlock()
	if l == nil {
		return
	}
	if err := os.Remove(MarkPath(a.stateDir, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		a.log.Warn("Removing the agent pid file failed", "session_id", id, "error", err)
	}
	if err := l.Release(); err != nil {
		a.log.Warn("Releasing the session lease failed", "session_id", id, "error", err)
	}
}

// ReleaseIfIdle drops a lease taken without a process started on it
// (recovery's), so another conversation may resume the session.
func (a *Slot) ReleaseIfIdle() {
	if a.Live() == nil {
		a.Release()
	}
}

// markAgent records pid as the live claude process of the leased session.
func (a *Slot) markAgent(pid int) {
	id := a.Leased()
	if id == "" || pid <= 0 {
		return
	}
	line := strconv.Itoa(pid)
	if st, ok := ProcStart(pid); ok {
		line += " " + st
	}
	if err := workspace.WriteFileAtomic(MarkPath(a.stateDir, id), []byte(line+"\n")); err != nil {
		// Without the mark an orphan after a kill could not be found;
		// the turn still runs.
		a.log.Warn("Recording the agent pid failed", "session_id", id, "error", err)
	}
}
