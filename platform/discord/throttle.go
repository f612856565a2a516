package discord

import (
	"context"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/platform/internal/backoff"
)

// editThrottle spaces edits of one message at least interval apart. A call
// that must wait and is overtaken by a newer edit of the same message
// returns without sending (latest wins); the newest text is always sent, so
// the final state of a progress message is never lost. It starts no
// goroutine: each caller waits for its own slot.
type editThrottle struct {
	interval time.Duration

	mu      sync.Mutex // guards entries
	entries map[string]*editSlot

	// waiting, when set (tests), is called once a caller has taken its
	// place in line.
	waiting func(key string)
}

type editSlot struct {
	last    time.Time // when the last edit was sent (or started)
	seq     uint64    // newest edit requested
	waiting int
	// sending serialises the sends of one message, so an edit that was
	// slow to reach Telegram cannot land after a newer one.
	sending sync.Mutex
}

func newEditThrottle(interval time.Duration) *editThrottle {
	return &editThrottle{interval: interval, entries: make(map[string]*editSlot)}
}

// do runs send for key unless a newer edit of key arrives while this one
// waits for its slot.
func (t *editThrottle) do(ctx context.Context, key string, send func(context.Context) error) error {
	t.mu.Lock()
	s, ok := t.entries[key]
	if !ok {
		t.prune()
		s = &editSlot{}
		t.entries[key] = s
	}
	s.seq++
	mine := s.seq
	wait := time.Until(s.last.Add(t.interval))
	s.waiting++
	t.mu.Unlock()
	if t.waiting != nil {
		t.waiting(key)
	}

	err := backoff.Sleep(ctx, wait)

	t.mu.Lock()
	s.waiting--
	if err != nil {
		t.mu.Unlock()
		return err
	}
	if s.seq != mine {
		t.mu.Unlock()
		return nil // superseded by a newer edit, which will be sent
	}
	s.last = time.Now()
	t.mu.Unlock()
	s.sending.Lock()
	defer s.sending.Unlock()
	return send(ctx)
}

// prune forgets idle messages so the map stays small. Called with mu held.
func (t *editThrottle) prune() {
	if len(t.entries) < 256 {
		return
	}
	cutoff := time.Now().Add(-t.interval)
	for k, s := range t.entries {
		if s.waiting == 0 && s.last.Before(cutoff) {
			delete(t.entries, k)
		}
	}
}
