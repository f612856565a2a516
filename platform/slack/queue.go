package slack

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cc-connect/cc-connect/platform/internal/lanes"
)

// defaultDrainGrace is how long a stopping adapter keeps handing already
// acknowledged events to the handler: long enough for the engine to
// answer or journal a few messages, short enough not to hold up a
// shutdown or reload.
const defaultDrainGrace = 5 * time.Second

// maxQueued bounds the events queued or being handled across all
// conversations of the workspace; past it the pump waits, and Slack's
// unacknowledged events wait in Slack.
const maxQueued = 256

// workQueue carries events from the pump to the handler, in order per
// conversation (a lane per channel and thread, as the engine keys its
// sessions) and conversations side by side: a slow call or download for
// one conversation holds up only that one, and every other conversation's
// messages are handled, and acknowledged, meanwhile.
//
// Slack never redelivers an acked event, so what is queued must reach the
// handler even when Run is stopping: the handler's context outlives Run's
// by a grace (graceAfterStop) and only then is the rest given up, loudly.
type workQueue struct {
	lanes *lanes.Lanes
	// handle is the handler's context: not cancelled with Run's, but when
	// the grace after it runs out.
	handle    context.Context
	giveUp    context.CancelFunc
	finished  chan struct{} // closed when every lane is drained
	closeOnce sync.Once
	dropped   atomic.Int64 // work given up after the grace
	log       *slog.Logger
}

func newWorkQueue(ctx context.Context, size int, log *slog.Logger) *workQueue {
	handle, giveUp := context.WithCancel(context.WithoutCancel(ctx))
	return &workQueue{lanes: lanes.New(handle, size), handle: handle, giveUp: giveUp,
		finished: make(chan struct{}), log: log}
}

// conversationKey is the lane of a channel's thread ("" for a DM's own
// conversation).
func conversationKey(channel, thread string) string { return channel + "/" + thread }

// put queues work on key's lane, waiting while the queue is full. It gives
// up only when the grace after stopping has run out, so an event acked
// during a shutdown is not dropped while it can still be handed over.
func (q *workQueue) put(key string, work func(context.Context)) {
	ok := q.lanes.Add(q.handle.Done(), key, func(ctx context.Context) {
		if ctx.Err() != nil {
			q.dropped.Add(1)
			return
		}
		work(ctx)
	})
	if !ok {
		q.log.Warn("Slack event acknowledged but not handed over before stopping", "dropped", 1)
	}
}

// close ends the queue and waits until every lane is drained (or given
// up, once the grace ran out); only the pump's owner calls it, after the
// pump.
func (q *workQueue) close() {
	q.closeOnce.Do(func() {
		q.lanes.Close()
		close(q.finished)
		q.giveUp()
		if n := q.dropped.Load(); n > 0 {
			q.log.Warn("Slack events acknowledged but not handed over before stopping", "dropped", n)
		}
	})
}

// graceAfterStop returns the goroutine that, once ctx (Run's) ends, gives
// the lanes grace to drain and then cancels the handler's context.
func (q *workQueue) graceAfterStop(ctx context.Context, grace time.Duration) func() {
	return func() {
		select {
		case <-q.finished:
			return
		case <-ctx.Done():
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-q.finished:
		case <-t.C:
			q.giveUp()
		}
	}
}
