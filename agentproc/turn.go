package agentproc

import (
	"context"
	"errors"
	"sync"

	"github.com/google/uuid"
)

// turnEventBuffer is how many events a turn hands over without a goroutine
// of its own; past it, while its consumer is behind, they wait in the
// turn's backlog.
const turnEventBuffer = 64

// UserMessage is the user message that starts a turn.
type UserMessage struct {
	// UUID is the uuid the message carries; the CLI stores the message
	// under it in the transcript (PROTOCOL.md §14), so a caller that
	// records it durably before the turn can tell after a crash whether
	// the CLI had received the message. "" picks a random one.
	UUID string
	Text string
	// Images go with Text as image blocks (images.go).
	Images []Image
}

// Turn is one turn running on a Process: its events in order on Events,
// then how it ended from Result. The process's reader hands each event
// straight to Events; when the consumer is behind, the events wait in the
// turn's backlog (unbounded), moved on by a goroutine that lives only that
// long. So a slow consumer never holds up the reader, which also reads the
// answers to control requests: Interrupt, SetModel and RespondPermission
// may be called while events wait. Read Events until it is closed.
type Turn struct {
	p      *Process
	own    bool // the CLI started it by itself (background.go)
	uuid   string
	events chan Event
	done   chan struct{}
	res    *Result // set before done is closed
	err    error

	mu        sync.Mutex  // guards the fields below
	stopWatch func() bool // stops watching StartTurn's ctx
	backlog   []Event
	draining  bool // a goroutine moves the backlog to events; it alone closes events then
	ended     bool // res and err are decided
	closed    bool // events and done are closed
	abandoned bool // StartTurn's ctx ended first; the CLI's turn still runs
	drained   chan struct{}
	stop      chan struct{} // closed when abandoned: the mover stops
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

// StartTurn writes msg and returns the turn it starts. Events that came
// between turns and still wait in Events are the turn's first. ctx bounds
// the turn: when it ends before the result, the turn ends with ctx's error
// and the CLI's turn keeps running (Interrupt or Close it); its events are
// dropped up to its result, and the next StartTurn waits for that result
// first, so that a stale result never answers a later message.
// ErrTurnInProgress means a turn is running.
func (p *Process) StartTurn(ctx context.Context, msg UserMessage) (*Turn, error) {
	if !p.turnBusy.CompareAndSwap(false, true) {
		return nil, ErrTurnInProgress
	}
	p.routeMu.Lock()
	prev := p.cur
	p.routeMu.Unlock()
	if prev != nil { // only an abandoned turn stays current once its consumer left
		select {
		case <-prev.drainedChan():
		case <-ctx.Done():
			p.turnBusy.Store(false)
			return nil, ctx.Err()
		}
	}
	id := msg.UUID
	if id == "" {
		id = uuid.NewString()
	}
	t := &Turn{p: p, uuid: id, events: make(chan Event, turnEventBuffer), done: make(chan struct{}), stop: make(chan struct{})}
	// Watched from the start: ctx may end while the line is written.
	t.mu.Lock()
	t.stopWatch = context.AfterFunc(ctx, func() { t.abandon(ctx.Err()) })
	t.mu.Unlock()
	p.routeMu.Lock()
	p.cur = t
	p.takeWaiting(t)
	p.routeMu.Unlock()
	if err := p.sendContent(ctx, id, msg.Text, msg.Images); err != nil {
		switch {
		case ctx.Err() != nil:
			p.dropTurn(t)
			return nil, ctx.Err()
		case p.closing.Load():
			p.dropTurn(t)
			return nil, err // Close was called: nothing went out
		}
		// A write fails only when the process is gone or going (an
		// unknown --resume id exits without reading stdin); its result or
		// exit status, which the turn reports, says more than the broken
		// pipe does.
	}
	p.routeMu.Lock()
	if p.streamEnded && p.cur == t {
		// The reader was done before the turn was current.
		p.cur = nil
		p.endTurn(t, nil, p.endedError())
	}
	p.routeMu.Unlock()
	return t, nil
}

// dropTurn forgets a turn whose message never went out.
func (p *Process) dropTurn(t *Turn) {
	t.mu.Lock()
	t.stopWatch()
	t.mu.Unlock()
	p.routeMu.Lock()
	if p.cur == t {
		p.cur = nil
	}
	p.routeMu.Unlock()
	p.turnBusy.Store(false)
}

// takeWaiting moves the events waiting in Events (they came between turns)
// into t, first (routeMu held).
func (p *Process) takeWaiting(t *Turn) {
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				return
			}
			p.deliverLocked(t, ev)
		default:
			return
		}
	}
}

// route hands one event from the reader to the running turn, or, between
// turns, to Events.
func (p *Process) route(ev Event) {
	p.routeMu.Lock()
	t := p.cur
	if _, ok := ev.(Init); ok && t == nil && !p.streamEnded {
		t = p.ownTurnLocked() // the CLI starts a turn by itself
	}
	p.note(ev, t != nil)
	if _, ok := ev.(*Result); ok && t == nil && p.loose.Load() > 0 {
		p.loose.Add(-1) // the result of a message Send wrote
	}
	if t == nil {
		p.routeMu.Unlock()
		p.events <- ev
		// A turn may have started while this waited for room: what is
		// in Events now comes before that turn's own events.
		p.routeMu.Lock()
		if t := p.cur; t != nil {
			p.takeWaiting(t)
		}
		p.routeMu.Unlock()
		return
	}
	p.deliverLocked(t, ev)
	p.routeMu.Unlock()
}

// deliverLocked passes ev to t, ending it on its result (routeMu held).
func (p *Process) deliverLocked(t *Turn, ev Event) {
	switch e := ev.(type) {
	case *Result:
		p.cur = nil
		p.endTurn(t, e, resultError(e))
	case Malformed:
		t.deliver(ev)
		if errors.Is(e.Err, ErrMalformedOutput) {
			p.cur = nil
			p.endTurn(t, nil, e.Err)
		}
	default:
		t.deliver(ev)
	}
}

// endStream ends the running turn when the reader is done: the process
// ended before its result.
func (p *Process) endStream() {
	p.routeMu.Lock()
	defer p.routeMu.Unlock()
	p.streamEnded = true
	if t := p.cur; t != nil {
		p.cur = nil
		p.endTurn(t, nil, p.endedError())
	}
}

// endTurn ends t with res and err once its backlog is handed over; an
// abandoned turn has reached the result its next turn waits for.
func (p *Process) endTurn(t *Turn, res *Result, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopWatch()
	if t.abandoned {
		close(t.drained)
		return
	}
	if t.ended {
		return
	}
	t.res, t.err, t.ended = res, err, true
	if !t.draining {
		t.closeLocked()
	}
}

// deliver hands ev to the consumer at once when it has room and nothing
// waits before it, else queues it behind the others.
func (t *Turn) deliver(ev Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended || t.closed {
		return // abandoned: dropped up to the result
	}
	if !t.draining && len(t.backlog) == 0 {
		select {
		case t.events <- ev:
			return
		default:
		}
	}
	t.backlog = append(t.backlog, ev)
	if !t.draining {
		t.draining = true
		go t.drain()
	}
}

// drain moves the backlog to the consumer, in order, and ends with it (or
// when the turn is abandoned); it closes events when the turn ended
// meanwhile.
func (t *Turn) drain() {
	for {
		t.mu.Lock()
		if t.abandoned || len(t.backlog) == 0 {
			t.draining = false
			if t.ended && !t.closed {
				t.closeLocked()
			}
			t.mu.Unlock()
			return
		}
		ev := t.backlog[0]
		t.backlog[0] = nil
		t.backlog = t.backlog[1:]
		t.mu.Unlock()
		select {
		case t.events <- ev:
		case <-t.stop:
		}
	}
}

// abandon ends a turn whose StartTurn ctx ended before its result. The
// CLI's turn goes on; its events are dropped until its result, which
// closes drained.
func (t *Turn) abandon(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended || t.closed {
		return
	}
	t.abandoned, t.ended = true, true
	t.res, t.err = nil, err
	t.drained = make(chan struct{})
	t.backlog = nil
	close(t.stop)
	if !t.draining {
		t.closeLocked()
	}
}

// drainedChan is closed when an abandoned turn's result has come.
func (t *Turn) drainedChan() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.drained == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return t.drained
}

// closeLocked closes the turn for its consumer (t.mu held, no mover
// running).
func (t *Turn) closeLocked() {
	t.closed = true
	close(t.events)
	t.p.turnBusy.Store(false)
	close(t.done)
}
