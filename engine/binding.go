package engine

import (
	"log/slog"
	"slices"
	"sync"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/workspace"
)

// resolve finds the binding of a platform channel: an exact channel beats
// "*". The returned copy's Workspace is normalized, so every spelling of a
// folder (trailing slash, symlink, "..") becomes one key.
func (e *Engine) resolve(plat, channel string) (Binding, bool) {
	b, ok := resolveIn(e.bindings(), plat, channel)
	if !ok {
		return Binding{}, false
	}
	return e.normalized(b), true
}

// resolveIn finds the binding of a platform channel in bs.
func resolveIn(bs []Binding, plat, channel string) (Binding, bool) {
	var wildcard *Binding
	for i := range bs {
		b := &bs[i]
		if b.Platform != plat {
			continue
		}
		if b.Channel == channel {
			return *b, true
		}
		if b.Channel == "*" && wildcard == nil {
			wildcard = b
		}
	}
	if wildcard != nil {
		return *wildcard, true
	}
	return Binding{}, false
}

// liveBinding is the conversation's binding in the config in force now. A
// reload swaps the bindings while sessions run, and who may do what (the
// allow list, approvers, admins, allow_shell) is read from it at every use,
// so a right taken away applies to the very next command. A conversation
// whose binding was removed keeps the one it started with: its channel
// takes no new messages, and what is running may still be answered.
func (s *session) liveBinding() Binding {
	if b, ok := resolveIn(s.e.bindings(), s.to.Platform, s.to.Channel); ok {
		return b
	}
	return s.binding
}

func (e *Engine) normalized(b Binding) Binding {
	b.Workspace = e.pool.normalize(b.Workspace)
	return b
}

func listed(list []string, id string) bool {
	return id != "" && (slices.Contains(list, "*") || slices.Contains(list, id))
}

// allowed says whether a user may reach the agent through b.
func (b Binding) allowed(userID string) bool { return listed(b.AllowUsers, userID) }

// admin says whether a user may run admin-only commands through b.
func (b Binding) admin(userID string) bool { return listed(b.Admins, userID) }

// approver says whether a user may answer permission prompts through b:
// an allowed user, and one of the approvers when b names any.
func (b Binding) approver(userID string) bool {
	return b.allowed(userID) && (len(b.Approvers) == 0 || listed(b.Approvers, userID))
}

// needsMention says whether messages in this conversation must mention the
// bot to start a session: by default in channels, not in DMs.
func (b Binding) needsMention(m platform.Message) bool {
	if b.RequireMention != nil {
		return *b.RequireMention && !m.IsDM
	}
	return !m.IsDM
}

// pool holds one entry per workspace folder, keyed on the normalized path,
// so two spellings of one folder can never get two entries. It remembers
// each spelling's real path, so that routing a message reads no symlinks;
// a reload forgets them (a folder moved behind a symlink is seen then).
type pool struct {
	log *slog.Logger

	mu         sync.Mutex // guards workspaces and real
	workspaces map[string]*workspaceEntry
	real       map[string]string // spelling -> normalized path
}

// workspaceEntry is one workspace folder shared by all sessions bound to it.
type workspaceEntry struct {
	Path string // normalized real path
}

func newPool(log *slog.Logger) *pool {
	return &pool{log: log, workspaces: map[string]*workspaceEntry{}, real: map[string]string{}}
}

// normalize is workspace.Normalize of path, read once per spelling.
func (p *pool) normalize(path string) string {
	p.mu.Lock()
	real, ok := p.real[path]
	p.mu.Unlock()
	if ok {
		return real
	}
	real = workspace.Normalize(path, p.log)
	p.mu.Lock()
	p.real[path] = real
	p.mu.Unlock()
	return real
}

// forget drops the remembered real paths (a reload reads them again).
func (p *pool) forget() {
	p.mu.Lock()
	clear(p.real)
	p.mu.Unlock()
}

// GetOrCreate returns the entry of the folder path names.
func (p *pool) GetOrCreate(path string) *workspaceEntry {
	key := p.normalize(path)
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.workspaces[key]
	if !ok {
		w = &workspaceEntry{Path: key}
		p.workspaces[key] = w
	}
	return w
}
