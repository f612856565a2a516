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

func (e *Engine) normalized(b binding.Binding) binding.Binding {
	b.Workspace = e.pool.normalize(b.Workspace)
	return b
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
