package conv

import (
	"slices"
	"sync"
)

// Recent remembers the last n ids (threads told of a refusal, threads
// read back), bounded.
type Recent struct {
	mu    sync.Mutex // guards ids and order
	n     int
	ids   map[string]bool
	order []string
}

// NewRecent remembers up to n ids.
func NewRecent(n int) *Recent { return &Recent{n: n, ids: map[string]bool{}} }

// Add reports whether id is new, and remembers it.
func (r *Recent) Add(id string) bool {
	if id == "" {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids[id] {
		return false
	}
	r.ids[id] = true
	r.order = append(r.order, id)
	if len(r.order) > r.n {
		delete(r.ids, r.order[0])
		r.order = r.order[1:]
	}
	return true
}

// Forget drops id.
func (r *Recent) Forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ids[id] {
		return
	}
	delete(r.ids, id)
	if i := slices.Index(r.order, id); i >= 0 {
		r.order = slices.Delete(r.order, i, i+1)
	}
}

// Has reports whether id is remembered.
func (r *Recent) Has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[id]
}

// Len is how many ids are remembered.
func (r *Recent) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}
