package engine

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/workspace"
)

// routing is which binding a platform channel is routed to: the
// bindings in force (New's, until a reload swaps them whole) and the team
// settings beside them. The binding returned has its workspace
// normalized, so every spelling of a folder (trailing slash, symlink,
// "..") is one key.
type routing struct {
	pool        *pool
	initial     []binding.Binding
	initialTeam TeamOptions
	bindings    atomic.Pointer[[]binding.Binding] // nil until the first reload: initial apply
	team        atomic.Pointer[TeamOptions]       // nil until a reload sets one: initialTeam applies
}

// all is the bindings in force.
func (rt *routing) all() []binding.Binding {
	if p := rt.bindings.Load(); p != nil {
		return *p
	}
	return rt.initial
}

// teamNow is the [chat] settings in force.
func (rt *routing) teamNow() TeamOptions {
	if p := rt.team.Load(); p != nil {
		return *p
	}
	return rt.initialTeam
}

// resolve finds the binding of a platform channel (binding.Route).
func (rt *routing) resolve(plat, channel string) (binding.Binding, bool) {
	b, ok := binding.Route(rt.all(), plat, channel)
	if !ok {
		return binding.Binding{}, false
	}
	b.Workspace = rt.pool.normalize(b.Workspace)
	return b, true
}

// swap puts bs (their workspaces normalized) in force, and team when set.
func (rt *routing) swap(bs []binding.Binding, team *TeamOptions) {
	rt.bindings.Store(&bs)
	if team != nil {
		t := *team
		rt.team.Store(&t)
	}
}

// pool normalizes workspace folders once per spelling, so that two
// spellings of one folder are one key and routing a message reads no
// symlinks; a reload forgets them (a folder moved behind a symlink is seen
// then).
type pool struct {
	log *slog.Logger

	mu   sync.Mutex        // guards real
	real map[string]string // spelling -> normalized path
}

func newPool(log *slog.Logger) *pool {
	return &pool{log: log, real: map[string]string{}}
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
