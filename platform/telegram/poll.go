package telegram

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/lanes"
)

// Telegram confirms updates by offset: a getUpdates with offset n drops
// every update below n for good. Updates are handled on lanes, one per
// conversation, so that a slow one (the engine posting, a download) holds
// up only its own chat; the offset asked for is therefore the oldest
// update still in flight, never past it, so that a crash loses nothing
// that was not handed over. Updates that come again from that offset and
// were seen already are skipped, but for one the engine did not take
// (HandleMessage failed), which is handed over again.

// maxQueued bounds the updates queued or being handled across all
// conversations; past it polling waits.
const maxQueued = 256

// defaultStuckPoll is how often polling asks for new updates while an
// update is in flight and no new one came (getUpdates then answers at
// once, with the updates in flight).
const defaultStuckPoll = 500 * time.Millisecond

// laneKey is a conversation's lane: a chat, and a topic in a forum.
func laneKey(chat, thread string) string { return chat + "/" + thread }

// queueUpdates queues each update not seen before on its lane and says
// how many there were.
func (a *Adapter) queueUpdates(ctx context.Context, h platform.Handler, ln *lanes.Lanes, tr *updateTracker, updates []json.RawMessage) int {
	fresh := 0
	for _, raw := range updates {
		// Only the id is read of an update seen before: it is in flight,
		// or handed over, already.
		var head struct {
			UpdateID *int `json:"update_id"`
		}
		if json.Unmarshal(raw, &head) == nil && head.UpdateID != nil && !tr.start(*head.UpdateID) {
			continue
		}
		id, ok, key, work := a.readUpdate(h, raw)
		if !ok {
			continue
		}
		fresh++
		if work == nil {
			tr.finish(id)
			continue
		}
		ln.Add(ctx.Done(), key, func(ctx context.Context) {
			if ctx.Err() != nil {
				return // stopping: not confirmed, Telegram sends it again
			}
			if work(ctx) {
				tr.finish(id)
			} else if ctx.Err() == nil {
				tr.again(id)
			}
		})
	}
	return fresh
}

// updateTracker knows which updates are seen and which are in flight.
type updateTracker struct {
	mu       sync.Mutex
	next     int              // one past the newest update seen
	inflight map[int]struct{} // seen and not yet handed over
	redo     map[int]struct{} // in flight, to be handed over again
	changed  chan struct{}    // closed and replaced when one finishes
}

// newUpdateTracker starts at offset next: updates below it were handed
// over already (by an earlier poller, in a cluster).
func newUpdateTracker(next int) *updateTracker {
	return &updateTracker{next: next, inflight: map[int]struct{}{}, redo: map[int]struct{}{}, changed: make(chan struct{})}
}

// start marks update id as in flight; false when it was seen already
// (update ids only grow) and is not to be handed over again.
func (t *updateTracker) start(id int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.redo[id]; ok {
		delete(t.redo, id)
		return true
	}
	if id < t.next {
		return false
	}
	t.next = id + 1
	t.inflight[id] = struct{}{}
	return true
}

// finish marks update id as handed over.
func (t *updateTracker) finish(id int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.inflight, id)
	close(t.changed)
	t.changed = make(chan struct{})
}

// again marks update id, in flight, as to be handed over again when it
// comes back (it stays the offset's floor).
func (t *updateTracker) again(id int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.redo[id] = struct{}{}
	close(t.changed)
	t.changed = make(chan struct{})
}

// offset is the getUpdates offset that confirms everything handed over
// and nothing in flight; busy says something is in flight.
func (t *updateTracker) offset() (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	off := t.next
	for id := range t.inflight {
		off = min(off, id)
	}
	return off, len(t.inflight) > 0
}

// waitChange waits until an update is handed over, d passes or ctx ends.
func (t *updateTracker) waitChange(ctx context.Context, d time.Duration) {
	t.mu.Lock()
	ch := t.changed
	t.mu.Unlock()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ch:
	case <-timer.C:
	case <-ctx.Done():
	}
}
