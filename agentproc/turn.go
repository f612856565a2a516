package agentproc

import (
	"context"
	"errors"

	"github.com/google/uuid"
)

// turnEventBuffer is how many events a turn holds for its consumer before
// it spills into its unbounded backlog: enough to hand a burst over in one
// go.
const turnEventBuffer = 64

// UserMessage is the user message that starts a turn.
type UserMessage struct {
	// UUID is the uuid the message carries; the CLI stores the message
	// under it in the transcript (PROTOCOL.md §14), so a caller that
	// records it durably before the turn can tell after a crash whether
	// the CLI had received the message. "" picks a random one.
	UUID string
	Text string
}

// Turn is one turn running on a Process: its events in order on Events,
// then how it ended from Result. The events are buffered inside the turn,
// as many as the consumer lets pile up, so that a slow consumer never
// holds up the process's reader (which also reads the answers to control
// requests: Interrupt, SetModel, RespondPermission may be called while the
// events wait). Read Events until it is closed.
type Turn struct {
	uuid   string
	events chan Event
	done   chan struct{}
	res    *Result // set before done is closed
	err    error
}

// UUID is the uuid the turn's user message carries.
func (t *Turn) UUID() string { return t.uuid }

// Events delivers the turn's events, in order, up to (not including) its
// result, and is closed when the turn ended.
func (t *Turn) Events() <-chan Event { return t.events }

// Done is closed when the turn ended and Events is closed.
func (t *Turn) Done() <-chan struct{} { return t.done }

// Result waits for the end of the turn and returns its result. The result
// is returned even with ErrPromptTooLong and ErrSessionNotFound. An
// *ExitError means the process ended before a result; ErrMalformedOutput
// that the result was lost; the ctx's error that StartTurn's ctx ended
// first (the CLI's turn goes on: Interrupt or Close it).
func (t *Turn) Result() (*Result, error) {
	<-t.done
	return t.res, t.err
}

// Wait reads the turn's events to the end, passing each to on (nil: drop
// them), and returns Result. It suits callers with nothing else to wait
// on; others select on Events.
func (t *Turn) Wait(on func(Event)) (*Result, error) {
	for ev := range t.events {
		if on != nil {
			on(ev)
		}
	}
	return t.Result()
}

// StartTurn writes msg and returns the turn it starts. ctx bounds the
// turn: when it ends before the result, the turn ends with ctx's error and
// the CLI's turn keeps running (Interrupt or Close it); this process then
// reads that turn's events to its result in the background, and the next
// StartTurn waits for that first, so that a stale result never answers a
// later message. ErrTurnInProgress means a turn is running.
func (p *Process) StartTurn(ctx context.Context, msg UserMessage) (*Turn, error) {
	if !p.turnBusy.CompareAndSwap(false, true) {
		return nil, ErrTurnInProgress
	}
	p.mu.Lock()
	drained := p.drained
	p.mu.Unlock()
	if drained != nil {
		select {
		case <-drained:
		case <-ctx.Done():
			p.turnBusy.Store(false)
			return nil, ctx.Err()
		}
	}
	id := msg.UUID
	if id == "" {
		id = uuid.NewString()
	}
	if err := p.sendUUID(ctx, id, msg.Text); err != nil {
		switch {
		case ctx.Err() != nil:
			p.turnBusy.Store(false)
			return nil, ctx.Err()
		case p.closing.Load():
			p.turnBusy.Store(false)
			return nil, err // Close was called: nothing went out
		}
		// A write fails only when the process is gone or going (an
		// unknown --resume id exits without reading stdin); its result or
		// exit status, which the turn reports, says more than the broken
		// pipe does.
	}
	t := &Turn{uuid: id, events: make(chan Event, turnEventBuffer), done: make(chan struct{})}
	go p.pump(ctx, t)
	return t, nil
}

// pump moves the process's events into the turn until its result: into
// an unbounded backlog first, so that the reader never waits on the
// turn's consumer. It is the one goroutine a turn adds; it ends with the
// turn's result, or with the process's stream.
func (p *Process) pump(ctx context.Context, t *Turn) {
	var backlog []Event
	for {
		var out chan<- Event
		var next Event
		if len(backlog) > 0 {
			out, next = t.events, backlog[0]
		}
		select {
		case ev, ok := <-p.events:
			if !ok {
				p.endTurn(ctx, t, backlog, nil, p.endedError())
				return
			}
			switch e := ev.(type) {
			case *Result:
				p.endTurn(ctx, t, backlog, e, resultError(e))
				return
			case Malformed:
				backlog = append(backlog, ev)
				if errors.Is(e.Err, ErrMalformedOutput) {
					p.endTurn(ctx, t, backlog, nil, e.Err)
					return
				}
			default:
				backlog = append(backlog, ev)
			}
		case out <- next:
			backlog[0] = nil
			backlog = backlog[1:]
		case <-ctx.Done():
			p.abandonTurn(t, ctx.Err())
			return
		}
	}
}

// endTurn hands the rest of the backlog over, then ends the turn with res
// and err.
func (p *Process) endTurn(ctx context.Context, t *Turn, backlog []Event, res *Result, err error) {
	for _, ev := range backlog {
		select {
		case t.events <- ev:
		case <-ctx.Done():
			// The consumer left with the result already read: nothing
			// is left to drain.
			t.res, t.err = nil, ctx.Err()
			close(t.events)
			p.turnBusy.Store(false)
			close(t.done)
			return
		}
	}
	t.res, t.err = res, err
	close(t.events)
	p.turnBusy.Store(false)
	close(t.done)
}

// abandonTurn ends a turn whose ctx ended before its result, then reads
// the CLI's turn to its result (or the end of the stream), so that the
// next turn starts on a clean stream; StartTurn waits for that.
func (p *Process) abandonTurn(t *Turn, err error) {
	drained := make(chan struct{})
	defer close(drained)
	p.mu.Lock()
	p.drained = drained
	p.mu.Unlock()
	t.res, t.err = nil, err
	close(t.events)
	p.turnBusy.Store(false)
	close(t.done)
	for ev := range p.events {
		if _, ok := ev.(*Result); ok {
			return
		}
	}
}
