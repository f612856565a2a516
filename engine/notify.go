package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/platform"
)

// maxNotices bounds the notices in flight for conversations without a
// session; past it a notice is logged and dropped (the platform is not
// answering, and a flood of refusals would pile up goroutines).
const maxNotices = 64

// notifier posts the texts the accept path has for a conversation that
// has no session (a refusal to a user who is not allowed, a shutdown
// notice, a stale button), each on a goroutine of its own, so that the
// accept path never waits on the platform. The engine closes it after the
// sessions ended and waits for what is in flight.
type notifier struct {
	chat    func(name string) (platform.Adapter, bool) // the adapter registered now
	busy    func(delta int)                            // the engine's outstanding work
	bg      context.Context
	log     *slog.Logger
	metrics Metrics

	mu       sync.Mutex // guards the fields below
	inflight int
	closed   bool
	idle     *sync.Cond // signalled when inflight drops to 0
}

// notify posts text to to through a, asynchronously. Once the engine has
// stopped there is no goroutine left to hand it to, and no adapter running
// whose next event it could hold up: it is posted at once. It reports
// false when the notice was dropped (too many in flight).
func (n *notifier) notify(a platform.Adapter, to platform.Target, text string) bool {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		if _, err := a.Send(ctx, to, text); err != nil {
			n.log.Warn("Posting a notice failed", "platform", to.Platform, "channel", to.Channel, "thread", to.Thread, "error", err)
		}
		return true
	}
	if n.inflight >= maxNotices {
		n.mu.Unlock()
		n.log.Warn("Notice dropped", "platform", to.Platform, "channel", to.Channel, "thread", to.Thread,
			"notice", conv.Quote(text, 120))
		return false
	}
	n.inflight++
	n.mu.Unlock()
	n.busy(1)
	go func() {
		defer n.busy(-1)
		defer n.done()
		n.post(a, to, text)
	}()
	return true
}

// sendTimeout bounds one notice's post, so that an adapter that stopped
// answering cannot hold the shutdown forever.
const sendTimeout = 2 * time.Minute

// post posts text to to through the adapter registered under a's name now
// (a reload may have replaced a), else a.
func (n *notifier) post(a platform.Adapter, to platform.Target, text string) {
	if cur, ok := n.chat(to.Platform); ok {
		a = cur
	}
	to.MessageID = ""
	ctx, cancel := context.WithTimeout(n.bg, sendTimeout)
	defer cancel()
	if _, err := a.Send(ctx, to, text); err != nil {
		n.metrics.PlatformError(to.Platform)
		n.log.Error("Posting to the chat failed", "platform", to.Platform, "channel", to.Channel, "thread", to.Thread, "error", err)
	}
}

func (n *notifier) done() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.inflight--
	if n.inflight == 0 && n.idle != nil {
		n.idle.Broadcast()
	}
}

// close refuses new notices and waits for those in flight.
func (n *notifier) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	if n.idle == nil {
		n.idle = sync.NewCond(&n.mu)
	}
	for n.inflight > 0 {
		n.idle.Wait()
	}
}
