package telegram

import (
	"sync"
	"testing"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// countObserver counts what an adapter reports.
type countObserver struct {
	mu                 sync.Mutex // guards the counts
	errors, reconnects map[string]int
}

func (c *countObserver) PlatformError(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errors[p]++
}

func (c *countObserver) Reconnect(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reconnects[p]++
}

var _ platform.Observer = (*countObserver)(nil)

// TestObserverCountsConflictAndRecovery: a refused poll is an error, and
// polling again afterwards a reconnect, both under the instance name.
func TestObserverCountsConflictAndRecovery(t *testing.T) {
	f := faketelegram.New(t)
	a := newTestAdapter(t, f, nil)
	obs := &countObserver{errors: map[string]int{}, reconnects: map[string]int{}}
	a.SetObserver(obs)
	f.Override("getUpdates", faketelegram.Answer{Status: 409, Body: `{"ok":false,"error_code":409,"description":"Conflict: terminated by other getUpdates request"}`})
	h := platformtest.NewHandler()
	runAdapter(t, a, h)
	f.Next(t, "getUpdates") // the refused poll
	f.Next(t, "getUpdates") // the retry, after the status was set
	f.Feed(update(1, map[string]any{"message_id": 1, "date": 1, "chat": map[string]any{"id": 42, "type": "private"}, "from": user(7, "alice", false), "text": "back"}))
	h.Message(t)
	f.Next(t, "getUpdates")
	obs.mu.Lock()
	defer obs.mu.Unlock()
	name := a.Name()
	if obs.errors[name] < 1 || obs.reconnects[name] != 1 {
		t.Errorf("errors %v reconnects %v, want at least one error and one reconnect for %s", obs.errors, obs.reconnects, name)
	}
}
