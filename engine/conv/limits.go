package conv

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/workspace"
)

// Usage windows (docs/turns.md "Usage limits"). When Claude refuses a
// turn for a usage limit, the window is the login's, not the
// conversation's: every conversation of that login (the same agent
// config) waits for its reset instead of failing one by one. limitBook
// keeps the windows in one place, persisted next to the state so a
// restart still waits; the conversations read it before each turn
// (Conversation.next) and the refused message stays pending in the
// journal until it runs.

// limitBackoff is the first wait when the CLI does not say when the window
// resets (an API key's 429); it doubles with each refusal up to
// limitBackoffMax.
const (
	limitBackoff    = 5 * time.Minute
	limitBackoffMax = time.Hour
)

// limitWindow is one login's exhausted window.
type limitWindow struct {
	Until time.Time `json:"until"`
	// Known: Until is the reset the CLI reported; else it is a back-off.
	Known bool `json:"known"`
	// Backoff is the last back-off waited (the next doubles it).
	Backoff time.Duration `json:"backoff,omitempty"`
}

// limitBook holds the windows of the logins. Safe for concurrent use.
type limitBook struct {
	path string
	// first is the first back-off (agent.limit_retry).
	first time.Duration
	now   func() time.Time
	log   *slog.Logger
	// after is the clock's timer (time.After; tests drive it).
	after func(time.Duration) <-chan time.Time

	mu      sync.Mutex // guards the fields below
	loaded  bool
	windows map[string]limitWindow // by login
	// parked are the uuids of messages refused for a limit and not run
	// since: a restart must send them again, though the transcript shows
	// their turn ended (recovery.go).
	parked map[string]bool
}

// limitFile is what limitBook keeps on disk.
type limitFile struct {
	Windows map[string]limitWindow `json:"windows"`
	Parked  []string               `json:"parked,omitempty"`
}

func newLimitBook(stateDir string, now func() time.Time, log *slog.Logger) *limitBook {
	return &limitBook{path: filepath.Join(stateDir, "limits", "windows.json"), first: limitBackoff, now: now, log: log, after: time.After}
}

// loginOf names the login of an agent config: what decides whose usage a
// turn counts against (the CLI, the OS user, the credentials and where
// they are read). The credentials are hashed: the name reaches a file.
func loginOf(cfg agentproc.Config) string {
	h := sha256.New()
	h.Write([]byte(cfg.Command))
	if cfg.User != nil {
		h.Write([]byte("\x00user=" + cfg.User.Name))
	}
	keys := []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR", "ANTHROPIC_BASE_URL", "HOME"}
	for _, k := range keys {
		if v, ok := cfg.Env[k]; ok {
			h.Write([]byte("\x00" + k + "=" + v))
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// refused records that login's window is exhausted: until the reset the
// CLI reported (resets, when not zero), else for a back-off doubling the
// last one. It returns the window.
func (b *limitBook) refused(login string, resets time.Time) limitWindow {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loadLocked()
	now := b.now()
	w := b.windows[login]
	switch {
	case !resets.IsZero() && resets.After(now):
		w = limitWindow{Until: resets, Known: true}
	case w.Until.After(now):
		// Refused inside a window already told (a turn that started
		// before it was recorded): keep it.
	default:
		next := min(b.first, limitBackoffMax)
		if w.Backoff > 0 {
			next = min(2*w.Backoff, limitBackoffMax)
		}
		w = limitWindow{Until: now.Add(next), Backoff: next}
	}
	b.windows[login] = w
	b.saveLocked()
	return w
}

// closed returns login's window when it is still exhausted.
func (b *limitBook) closed(login string) (limitWindow, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loadLocked()
	w, ok := b.windows[login]
	if !ok || w.Until.IsZero() {
		return limitWindow{}, false
	}
	return w, true
}

// reopen ends login's window w once its wait ran out (a later refusal
// may have replaced it: that one stays). A back-off is remembered so the
// next refusal waits longer, until a turn succeeds (ok).
func (b *limitBook) reopen(login string, w limitWindow) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loadLocked()
	if cur, ok := b.windows[login]; !ok || !cur.Until.Equal(w.Until) {
		return
	}
	if w.Backoff > 0 {
		b.windows[login] = limitWindow{Backoff: w.Backoff}
	} else {
		delete(b.windows, login)
	}
	b.saveLocked()
}

// ok forgets login's back-off: a turn went through.
func (b *limitBook) ok(login string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loadLocked()
	if w, found := b.windows[login]; found && w.Until.IsZero() {
		delete(b.windows, login)
		b.saveLocked()
	}
}

// wait is when login's window w reopens: a channel of the clock's.
func (b *limitBook) wait(w limitWindow) <-chan time.Time {
	return b.after(max(0, w.Until.Sub(b.now())))
}

func (b *limitBook) loadLocked() {
	if b.loaded {
		return
	}
	b.loaded = true
	b.windows, b.parked = map[string]limitWindow{}, map[string]bool{}
	data, err := workspace.ReadFileNoFollow(b.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var f limitFile
	if err == nil {
		err = json.Unmarshal(data, &f)
	}
	if err != nil {
		// Losing it costs one refused turn per login, told and parked.
		b.log.Warn("The record of usage windows is unreadable; turns run until Claude refuses one", "path", b.path, "error", err)
		return
	}
	if f.Windows != nil {
		b.windows = f.Windows
	}
	for _, u := range f.Parked {
		b.parked[u] = true
	}
}

func (b *limitBook) saveLocked() {
	f := limitFile{Windows: b.windows}
	for u := range b.parked {
		f.Parked = append(f.Parked, u)
	}
	data, err := json.Marshal(f)
	if err == nil {
		err = workspace.WriteFileAtomic(b.path, data)
	}
	if err != nil {
		b.log.Warn("Writing the record of usage windows failed; a restart may run a parked message early", "path", b.path, "error", err)
	}
}

// park notes that the message sent as uuid was refused and waits.
func (b *limitBook) park(uuid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loadLocked()
	b.parked[uuid] = true
	b.saveLocked()
}

// unpark forgets uuid once its message ran (or was dropped).
func (b *limitBook) unpark(uuid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loadLocked()
	if b.parked[uuid] {
		delete(b.parked, uuid)
		b.saveLocked()
	}
}

// isParked reports whether the message sent as uuid waits for a reset.
func (b *limitBook) isParked(uuid string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loadLocked()
	return b.parked[uuid]
}

// limitGate is a conversation's side of the usage windows, on its
// goroutine: whether its next turn waits, and what its thread was told.
type limitGate struct {
	book *limitBook
	// login is the login of the conversation's agent config in force now.
	login func() string
	send  func(text string)
	log   *slog.Logger
	told  time.Time // the window (its Until) the thread was told of
	// warned is the reset of the window whose warning the thread was told.
	warned time.Time
	warnOn bool
}

// waitsForLimit reports whether an item is a turn of Claude's, which an
// exhausted window holds back (a person's message, a recovered one, a
// scheduled or triggered run).
func waitsForLimit(it workItem) bool {
	return it.kind == itemTurn || it.kind == itemRun
}

// hold reports whether the next turn must wait: the channel to wait on for
// the window's reset, and the window; nil when it may run. The thread is
// told once per window when its message will run.
func (g *limitGate) hold() (<-chan time.Time, limitWindow) {
	w, closed := g.book.closed(g.login())
	if !closed {
		return nil, w
	}
	if !g.told.Equal(w.Until) {
		g.told = w.Until
		g.send(render.LimitParked(w.Until, w.Known))
	}
	return g.book.wait(w), w
}

// reset ends window w: its wait ran out.
func (g *limitGate) reset(w limitWindow) {
	g.log.Info("Usage window reset; waiting messages run", "until", w.Until)
	g.book.reopen(g.login(), w)
}

// refused records a turn refused for a usage limit (err wraps a
// *agentproc.LimitError) as the login's exhausted window.
func (g *limitGate) refused(err error) limitWindow {
	var le *agentproc.LimitError
	errors.As(err, &le)
	var resets time.Time
	if le != nil {
		resets = le.ResetsAt
	}
	w := g.book.refused(g.login(), resets)
	g.log.Warn("Claude refused a turn for a usage limit; the message waits for the reset", "until", w.Until, "reset_known", w.Known, "error", err)
	return w
}

// noteEvent handles a rate_limit_event: a warning is told once per window;
// a rejected window is recorded with its reset (the refused turn's result
// follows).
func (g *limitGate) noteEvent(ev agentproc.RateLimit) {
	switch {
	case ev.Warning() && (!g.warnOn || !g.warned.Equal(ev.ResetsAt)):
		g.warnOn, g.warned = true, ev.ResetsAt
		g.send(render.LimitWarning(ev.ResetsAt))
	case ev.Rejected() && !ev.ResetsAt.IsZero():
		g.book.refused(g.login(), ev.ResetsAt)
	}
}

// ok says a turn went through: a back-off starts again from its first
// wait.
func (g *limitGate) ok() { g.book.ok(g.login()) }

// status is !status's line about the window ("" when none).
func (g *limitGate) status() string {
	w, closed := g.book.closed(g.login())
	if !closed {
		return ""
	}
	return render.LimitStatus(w.Until, w.Known)
}
