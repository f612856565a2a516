// Package recent holds the bounded memories the chat adapters keep about
// messages they posted (prompt texts, button references, the bot's
// reactions): a map that forgets its oldest entries first once full. What
// falls out is lost on purpose; nothing here is durable.
package recent

import (
	"container/list"
	"sync"
)

// Map remembers at most max entries, forgetting the oldest first. It is
// safe for concurrent use; call New.
type Map[V any] struct {
	mu    sync.Mutex // guards items and order
	max   int
	items map[string]*list.Element // key -> element of order
	order *list.List               // of *entry[V], oldest at the front
}

type entry[V any] struct {
	key string
	val V
}

// New returns a Map that holds at most max entries.
func New[V any](max int) *Map[V] {
	return &Map[V]{max: max, items: make(map[string]*list.Element), order: list.New()}
}

// Put sets key to v. A new key counts as the newest entry; an existing one
// keeps its age, so rewriting an entry does not keep it alive longer.
func (m *Map[V]) Put(key string, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.items[key]; ok {
		e.Value.(*entry[V]).val = v
		return
	}
	m.items[key] = m.order.PushBack(&entry[V]{key: key, val: v})
	for m.order.Len() > max(m.max, 0) {
		oldest := m.order.Remove(m.order.Front()).(*entry[V])
		delete(m.items, oldest.key)
	}
}

// Get returns the value of key, if it is still remembered.
func (m *Map[V]) Get(key string) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.items[key]; ok {
		return e.Value.(*entry[V]).val, true
	}
	var zero V
	return zero, false
}

// Take returns the value of key and forgets it.
func (m *Map[V]) Take(key string) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	delete(m.items, key)
	return m.order.Remove(e).(*entry[V]).val, true
}

// Len reports how many entries are remembered.
func (m *Map[V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len()
}
