package engine

import (
	"log/slog"
	"sync"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/workspace"
)

// resolve finds the binding of a platform channel: an exact channel beats
// "*". The returned copy's Workspace is normalized, so every spelling of a
// folder (trailing slash, symlink, "..") becomes one key.
func (e *Engine) resolve(plat, channel string) (binding.Binding, bool) {
	b, ok := binding.Route(e.bindings(), plat, channel)
	if !ok {
		return binding.Binding{}, false
	}
	return e.normalized(b), true
}

// liveBinding is the conversation's binding in the config in force now. A
// reload swaps the bindings while sessions run, and who may do what (the
// allow list, approvers, admins, allow_shell) is read from it at every use,
// so a right taken away applies to the very next command. A conversation
// whose binding was removed keeps the one it started with: its channel
// takes no new messages, and what is running may still be answered.
func (s *session) liveBinding() binding.Binding {
	if b, ok := binding.Route(s.e.bindings(), s.to.Platform, s.to.Channel); ok {
		return b
	}
	return s.binding
}

func (e *Engine) normalized(b binding.Binding) binding.Binding {
	b.Workspace = e.pool.normalize(b.Workspace)
	return b
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
