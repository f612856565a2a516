package telegram

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

// Telegram confirms updates by offset: a getUpdates with offset n drops
// every update below n for good. The poll loop hands each update to the
// handler itself, in the order Telegram sent them (the handler does only
// what durability needs: it journals a message with one fsync and
// returns, and the conversation's own goroutine does the rest), and asks
// next from one past the last update the handler returned for: an update
// is confirmed only once the handler has returned for it and for every
// update before it, so that a crash loses nothing that was not handed
// over. An update the handler did not take (HandleMessage failed) stops
// the batch: it is asked for again, with the updates after it, after a
// pause (retryPause), and handed over again.

// defaultRetryPause is how long polling waits before it asks again for
// an update the handler did not take.
const defaultRetryPause = 500 * time.Millisecond

// handUpdates hands each update at or past offset to h, in order, and
// returns the offset that confirms those h returned for; ok is false when
// h did not take one (the offset stays at it, and the updates after it
// are not handed over).
func (a *Adapter) handUpdates(ctx context.Context, h platform.Handler, answers *sync.WaitGroup, updates []json.RawMessage, offset int) (next int, ok bool) {
	for _, raw := range updates {
		var head struct {
			UpdateID *int `json:"update_id"`
		}
		if err := json.Unmarshal(raw, &head); err != nil || head.UpdateID == nil {
			// Without an id it cannot be confirmed by itself: the next
			// update's confirms it.
			a.log.Warn("Telegram update without an id", "error", err)
			continue
		}
		id := *head.UpdateID
		if id < offset {
			continue // confirmed already (by an earlier poller, in a cluster)
		}
		if ctx.Err() != nil || !a.handUpdate(ctx, h, answers, raw) {
			return offset, false
		}
		offset = id + 1
	}
	return offset, true
}
