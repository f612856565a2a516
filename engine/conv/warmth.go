package conv

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/workspace"
)

// Warm starts (agent.prewarm). Spares are started after each turn for the
// workspace it ran in (procs.Spares); after a restart there was no turn
// yet, so the first message of a deploy would wait for claude to start.
// warmth remembers, across restarts, which bindings had turns lately, and
// a start (Prewarm) starts spares for the most recent ones first, within
// the process caps (a spare never waits for a slot). It keeps each
// binding's last turn (platform, channel, workspace, when), at most
// warmthKeep of them, and never an agent's setup, which may hold secrets:
// a start computes the setup from the binding in force, as the turn that
// takes the spare will. The file is written at most once a minute and at
// shutdown: a crash costs the last minute's order, never a message.

const (
	// warmthKeep bounds the bindings remembered.
	warmthKeep = 64
	// warmthEvery is the longest a change waits before it is written.
	warmthEvery = time.Minute
)

// warmEntry is one binding's last turn.
type warmEntry struct {
	Platform  string    `json:"platform"`
	Channel   string    `json:"channel"`
	Workspace string    `json:"workspace"`
	At        time.Time `json:"at"`
}

// warmth is the record of recent turns (see above).
type warmth struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex // guards the fields below
	entries []warmEntry
	loaded  bool
	dirty   bool
	saved   time.Time
}

func newWarmth(stateDir string, log *slog.Logger) *warmth {
	return &warmth{path: filepath.Join(stateDir, "spares", "recent.json"), log: log}
}

// note records a turn of b now (after it, off its path), and writes the
// record when the last write is old enough.
func (w *warmth) note(b binding.Binding, now time.Time) {
	if b.Worktree {
		return // its conversations work in worktrees of their own, made on their first turn
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.loadLocked()
	i := slices.IndexFunc(w.entries, func(e warmEntry) bool { return e.Platform == b.Platform && e.Channel == b.Channel })
	if i >= 0 {
		w.entries = slices.Delete(w.entries, i, i+1)
	}
	w.entries = slices.Insert(w.entries, 0, warmEntry{Platform: b.Platform, Channel: b.Channel, Workspace: b.Workspace, At: now})
	if len(w.entries) > warmthKeep {
		w.entries = w.entries[:warmthKeep]
	}
	w.dirty = true
	if now.Sub(w.saved) >= warmthEvery {
		w.saveLocked(now)
	}
}

// recent is the record, the most recent first.
func (w *warmth) recent() []warmEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.loadLocked()
	return slices.Clone(w.entries)
}

// flush writes what changed since the last write (at shutdown).
func (w *warmth) flush(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dirty {
		w.saveLocked(now)
	}
}

func (w *warmth) loadLocked() {
	if w.loaded {
		return
	}
	w.loaded = true
	data, err := workspace.ReadFileNoFollow(w.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err == nil {
		err = json.Unmarshal(data, &w.entries)
	}
	if err != nil {
		// Only the spares of a start depend on it: it is started afresh.
		w.log.Warn("The record of recent turns is unreadable; no spares start before the first turn", "path", w.path, "error", err)
		w.entries = nil
	}
}

func (w *warmth) saveLocked(now time.Time) {
	data, err := json.Marshal(w.entries)
	if err == nil {
		err = workspace.WriteFileAtomic(w.path, data)
	}
	if err != nil {
		w.log.Warn("Writing the record of recent turns failed; the next start may start fewer spares", "path", w.path, "error", err)
		return
	}
	w.dirty, w.saved = false, now
}

// Prewarm starts spares (agent.prewarm) for the bindings with the most
// recent turns before the last stop, most recent first, each with the
// setup a new conversation of that binding starts its process with;
// within the process caps, on goroutines of the spares' own. A binding
// removed since, or moved to another workspace, is skipped.
func (e *Set) Prewarm() {
	if !e.spare.On() {
		return
	}
	for _, w := range e.warmth.recent() {
		b, ok := e.host.Binding(w.Platform, w.Channel)
		if !ok || b.Workspace != w.Workspace || b.Worktree {
			continue
		}
		a, ok := e.host.Chat(w.Platform)
		if !ok {
			continue
		}
		cfg := e.cfg.agentConfig(b, false)
		e.spare.Want(b.Workspace, cfg, wantsPartial(b, platform.CapabilitiesOf(a)))
	}
}
