package ingress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/names"
)

// ErrPoison: returned (wrapped) by a Handler for an event it can never
// accept, whatever happens: the event is terminated and logged, and the
// conversation goes on with the next one. Any other error is taken as
// passing and the same event is tried again, in its place.
var ErrPoison = errors.New("event can never be accepted")

// Fence is the binding's lease as the consumer needs it: checked before
// handing on each event, and Lost to stop.
type Fence interface {
	Check() error
	Lost() <-chan struct{}
	Token() uint64
}

// Result says what became of an accepted event.
type Result int

const (
	// Settled: the event reached its durable end at once (it was ignored,
	// refused with the user told, or a command answered): it is
	// acknowledged now.
	Settled Result = iota + 1
	// Journaled: the event is in the host's journal and will run. The
	// handler calls Delivery.Done when it reaches its durable end (its
	// turn's result, a cancel); until then it stays unacknowledged in the
	// stream, kept alive by this host, so that if this host dies the next
	// holder of the lease gets it again.
	Journaled
)

// Handler receives the events of one binding, one conversation at a time
// in stream order; different conversations run concurrently. Accept must
// check d.Fence right before it journals anything, and return once the
// event is durable (Journaled) or finished (Settled). It is called again
// with the same event (same ID) after a crash or a failover: it must
// accept a duplicate as the event it already has.
type Handler interface {
	Accept(ctx context.Context, d *Delivery) (Result, error)
}

// Delivery is one event handed to a Handler.
type Delivery struct {
	Event Event
	// Seq is the event's stream sequence: the order within its
	// conversation.
	Seq uint64
	// NumDelivered counts deliveries (more than 1: redelivered, perhaps
	// to another host).
	NumDelivered uint64
	// Fence is the lease the event is delivered under.
	Fence Fence
	// Publisher is the host that published the event, as its subject
	// names it ("" for an event of a cc-connect that did not name it).
	// Where the NATS server holds each host to its own name (the
	// per-host permissions of docs/cluster.md), it is who sent it;
	// Event.Origin is only what the sender wrote.
	Publisher string

	c *Consumer
	e *entry
}

// Done acknowledges a Journaled event once it has reached its durable end.
// It may be called from any goroutine, also after Serve returned (a turn
// that finished while the lease was being lost still ran: acknowledging
// it spares the next holder a repeat). Calling it again does nothing.
func (d *Delivery) Done() { d.c.ack(d.e) }

// Settle is Done, confirmed: it returns nil once the server has recorded
// the acknowledgement, after which no host gets the event again. A caller
// that settles before it shows the outcome (posts the turn's reply) never
// shows it twice, even if this host is cut off right then: on an error the
// event is delivered again, perhaps to another host, and the caller must
// not show it. Settling an event already settled returns nil.
func (d *Delivery) Settle(ctx context.Context) error {
	m, ok := d.e.owner.finish(d.e)
	if !ok && d.e.owner.gaveBack(d.e) {
		return fmt.Errorf("event %d: %w", d.Seq, ErrGivenBack)
	}
	if !ok {
		return nil
	}
	if err := m.DoubleAck(ctx); err != nil {
		return fmt.Errorf("acknowledging event %d: %w", d.Seq, err)
	}
	return nil
}

// ErrGivenBack: the event was given back to the server at a hand-over, for
// the binding's next holder; its outcome must not be shown here.
var ErrGivenBack = errors.New("given back to the binding's next holder")

// ConsumerOptions configure a binding's consumer.
type ConsumerOptions struct {
	Names   names.Names
	Binding names.Binding
	// AckWait is how long after this host's last sign of life the server
	// hands what it held to the next holder (cc-connect uses the lease
	// TTL). Messages in hand are kept alive every AckWait/3.
	AckWait time.Duration
	// MaxAckPending bounds the events in hand: journaled and not finished,
	// or waiting behind their conversation's previous event. At the
	// bound, the server stops delivering to this binding until some
	// finish.
	MaxAckPending int
	// Allow, when set, refuses (with an error saying why) an event its
	// publisher may not send, or that does not belong to this binding
	// (its conversation routes elsewhere): it is terminated and logged,
	// never handed on. publisher is "" when the subject names none.
	Allow func(ev Event, publisher string) error
	// Quiet, when closed, is this host stopping (a hand-over): nothing
	// more is pulled or handed on, what is in hand is kept alive while the
	// engine finishes its running turns, and once ctx ends what is still
	// in hand is given back to the server at once (not after AckWait), for
	// the binding's next holder.
	Quiet <-chan struct{}
	Log   *slog.Logger
}

// DefaultMaxAckPending allows about 470 conversations with full queues
// (21 journaled each) per binding.
const DefaultMaxAckPending = 10000

func (o ConsumerOptions) withDefaults() ConsumerOptions {
	if o.AckWait <= 0 {
		o.AckWait = 15 * time.Second
	}
	if o.MaxAckPending <= 0 {
		o.MaxAckPending = DefaultMaxAckPending
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// ConsumerConfig is the binding's durable consumer: explicit acks, every
// event redelivered until acknowledged (no delivery limit: an event is
// never dropped for having been redelivered often).
func ConsumerConfig(o ConsumerOptions) jetstream.ConsumerConfig {
	o = o.withDefaults()
	return jetstream.ConsumerConfig{
		Durable:       o.Names.Consumer(o.Binding),
		Description:   "cc-connect cluster: events of binding " + o.Binding.String(),
		FilterSubject: o.Names.BindingFilter(o.Binding),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       o.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: o.MaxAckPending,
	}
}

// Consumer is the owner's side of one binding.
type Consumer struct {
	js  jetstream.JetStream
	o   ConsumerOptions
	log *slog.Logger
}

// NewConsumer returns the consumer of o.Binding; nothing happens until
// Serve.
func NewConsumer(js jetstream.JetStream, o ConsumerOptions) *Consumer {
	o = o.withDefaults()
	return &Consumer{js: js, o: o, log: o.Log.With("binding", o.Binding.String())}
}

// Serve consumes the binding's events under fence f until ctx ends or the
// fence is lost, handing them to h. It returns an error wrapping the
// fence's once the fence is lost, ctx.Err() when ctx ends, one wrapping
// ErrNewerVersion when an event is of a newer format than this build
// reads (left in the stream for a host that reads it). Events handed on
// and not finished stay unacknowledged: the next holder gets them (at
// once after a hand-over, see ConsumerOptions.Quiet).
func (c *Consumer) Serve(ctx context.Context, f Fence, h Handler) error {
	if err := f.Check(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream := c.o.Names.Stream()
	cons, err := c.js.CreateOrUpdateConsumer(ctx, stream, ConsumerConfig(c.o))
	if err != nil {
		return fmt.Errorf("creating the consumer of %s: %w", c.o.Binding, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("reading the consumer of %s: %w", c.o.Binding, err)
	}
	s := &serving{c: c, cons: cons, f: f, h: h, ctx: ctx, queues: map[string]*convQueue{},
		tr: newTracker(info.Delivered.Consumer, info.NumAckPending), fenced: make(chan error, 1)}
	if !s.tr.inSync() {
		c.log.Info("Waiting for the events a previous holder had in hand before handing on new ones",
			"pending", info.NumAckPending)
	}
	expiry := min(max(c.o.AckWait/3, time.Second), 30*time.Second)
	it, err := cons.Messages(jetstream.PullMaxMessages(min(c.o.MaxAckPending, 256)), jetstream.PullExpiry(expiry))
	if err != nil {
		return fmt.Errorf("consuming %s: %w", c.o.Binding, err)
	}
	msgs := make(chan jetstream.Msg)
	readErr := make(chan error, 1)
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		for {
			m, err := it.Next()
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return
			}
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
				readErr <- err
				return
			}
			if err != nil {
				c.log.Debug("Consuming: the server is slow to answer; retrying", "error", err)
				continue
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	var giveBack func() // what to give back once the workers stopped
	defer func() {
		it.Stop()
		cancel()
		reader.Wait()
		s.workers.Wait()
		if giveBack != nil {
			giveBack()
		}
	}()

	progress := time.NewTicker(max(c.o.AckWait/3, 10*time.Millisecond))
	defer progress.Stop()
	quiet := c.o.Quiet
	resync := time.NewTicker(max(c.o.AckWait/4, 10*time.Millisecond))
	defer resync.Stop()
	for {
		select {
		case <-quiet:
			quiet = nil
			s.quiet.Store(true)
			it.Drain() // what was pulled still arrives, and is held
			c.log.Info("Stopping: nothing more is handed on; what is in hand is given back once the engine stopped",
				"in_hand", s.tr.count())
		case <-ctx.Done():
			if isClosed(c.o.Quiet) {
				// The engine stopped: nothing in hand runs here any more.
				s.quiet.Store(true)
				giveBack = func() { s.giveBack(false) }
			}
			return ctx.Err()
		case <-f.Lost():
			return c.fencedErr(f)
		case err := <-s.fenced:
			if errors.Is(err, ErrNewerVersion) {
				// What was not handed on goes to the next holder at once;
				// what was stops with the tenure, as on a lost lease.
				giveBack = func() { s.giveBack(true) }
			}
			return err
		case err := <-readErr:
			return fmt.Errorf("consuming %s: %w", c.o.Binding, err)
		case m := <-msgs:
			if err := f.Check(); err != nil {
				return err // not handed on, not acknowledged
			}
			s.arrive(m)
		case <-progress.C:
			for _, m := range s.tr.holding() {
				_ = m.InProgress() // a lost one only means an early redelivery, which is deduplicated
			}
		case <-resync.C:
			s.trySync()
		}
	}
}

// check refuses an event that is not one of this binding's, or that its
// publisher may not send: one whose body names another binding or
// another publisher than its subject, or that the options' Allow refuses.
func (c *Consumer) check(ev Event, publisher string) error {
	if b := ev.Binding.Names(); b != c.o.Binding {
		return fmt.Errorf("%w: an event of binding %s on the subject of %s", ErrMalformed, b, c.o.Binding)
	}
	if publisher != "" && ev.Origin != publisher {
		return fmt.Errorf("%w: published by %s, which wrote %q as its origin", ErrForged, publisher, ev.Origin)
	}
	if c.o.Allow != nil {
		if err := c.o.Allow(ev, publisher); err != nil {
			return fmt.Errorf("%w: %w", ErrForged, err)
		}
	}
	return nil
}

func (c *Consumer) fencedErr(f Fence) error {
	if err := f.Check(); err != nil {
		return err
	}
	return fmt.Errorf("serving %s: the lease was lost", c.o.Binding)
}

// ack acknowledges e if it is still in hand.
func (c *Consumer) ack(e *entry) {
	if e == nil {
		return
	}
	if m, ok := e.owner.finish(e); ok {
		if err := m.Ack(); err != nil {
			c.log.Debug("Acknowledging an event failed; it will be redelivered and deduplicated", "seq", e.seq, "error", err)
		}
	}
}

// serving is one Serve's state.
type serving struct {
	c      *Consumer
	cons   jetstream.Consumer
	f      Fence
	h      Handler
	ctx    context.Context
	tr     *tracker
	fenced chan error
	quiet  atomic.Bool // ConsumerOptions.Quiet was closed: nothing more is handed on

	mu      sync.Mutex // guards queues
	queues  map[string]*convQueue
	workers sync.WaitGroup
}

// convQueue is one conversation's events waiting for its worker.
type convQueue struct {
	items []*entry
}

func (s *serving) arrive(m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		s.c.log.Warn("A message without JetStream metadata on the ingress consumer", "subject", m.Subject(), "error", err)
		return
	}
	conv, _, err := s.c.o.Names.ParseIn(m.Subject())
	if err != nil {
		conv = "" // terminated below, on decoding
	}
	e, fresh := s.tr.arrive(meta.Sequence.Stream, meta.Sequence.Consumer, conv, m)
	if fresh && !s.tr.inSync() {
		s.trySync()
		return
	}
	if e != nil {
		s.dispatch(e)
	}
}

// trySync asks the server how many messages are pending and, if we hold
// them all, hands on what was held back.
func (s *serving) trySync() {
	if s.tr.inSync() {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	info, err := s.cons.Info(ctx)
	if err != nil {
		return
	}
	held := s.tr.sync(info.NumAckPending)
	if len(held) > 0 || s.tr.inSync() {
		s.c.log.Info("Holding every pending event: handing them on in order", "events", len(held))
	}
	for _, e := range held {
		s.dispatch(e)
	}
}

// dispatch queues e behind its conversation's earlier events, starting the
// conversation's worker if it has none.
func (s *serving) dispatch(e *entry) {
	if s.quiet.Load() {
		return // held, and given back at the end
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, running := s.queues[e.conv]
	if !running {
		q = &convQueue{}
		s.queues[e.conv] = q
	}
	q.items = append(q.items, e)
	if running {
		return
	}
	s.workers.Add(1)
	go s.work(e.conv, q)
}

// work runs one conversation's queue until it is empty.
func (s *serving) work(conv string, q *convQueue) {
	defer s.workers.Done()
	for {
		s.mu.Lock()
		if len(q.items) == 0 {
			delete(s.queues, conv)
			s.mu.Unlock()
			return
		}
		e := q.items[0]
		q.items = q.items[1:]
		s.mu.Unlock()
		if !s.handle(e) {
			return // fenced or stopping: the rest stays unacknowledged
		}
	}
}

// handle hands e to the handler, retrying passing failures in place so
// that the conversation's order holds. It returns false when serving must
// stop.
func (s *serving) handle(e *entry) bool {
	m := s.tr.latest(e).(jetstream.Msg)
	_, publisher, err := s.c.o.Names.ParseIn(m.Subject())
	if err != nil {
		s.terminate(e, fmt.Errorf("%w: %w", ErrMalformed, err))
		return true
	}
	ev, err := Decode(m.Data())
	if errors.Is(err, ErrNewerVersion) {
		// Not this build's to judge: left for a host that reads it.
		s.stop(err)
		return false
	}
	if err == nil {
		err = s.c.check(ev, publisher)
	}
	if err != nil {
		s.terminate(e, err)
		return true
	}
	meta, _ := m.Metadata()
	d := &Delivery{Event: ev, Seq: e.seq, Fence: s.f, Publisher: publisher, c: s.c, e: e}
	if meta != nil {
		d.NumDelivered = meta.NumDelivered
	}
	wait := 50 * time.Millisecond
	for {
		if s.ctx.Err() != nil || s.quiet.Load() {
			return false
		}
		if err := s.f.Check(); err != nil {
			s.stop(err)
			return false
		}
		res, err := s.h.Accept(s.ctx, d)
		switch {
		case err == nil && res == Journaled:
			s.tr.handed(e)
			return true
		case err == nil:
			s.c.ack(e)
			return true
		case errors.Is(err, ErrPoison):
			s.terminate(e, err)
			return true
		}
		if ferr := s.f.Check(); ferr != nil {
			s.stop(ferr)
			return false
		}
		s.c.log.Warn("Accepting an event failed; trying it again", "seq", e.seq, "error", err)
		select {
		case <-s.ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, s.c.o.AckWait)
	}
}

func isClosed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// giveBack hands the events still in hand back to the server, to be
// delivered at once to the binding's next holder: every one at a
// hand-over, once the engine stopped and nothing of them runs here any
// more; only those never handed on when onlyUnhanded.
func (s *serving) giveBack(onlyUnhanded bool) {
	held := s.tr.giveUp(onlyUnhanded)
	for _, m := range held {
		if err := m.Nak(); err != nil {
			s.c.log.Debug("Giving an event back failed; it is redelivered after its ack wait", "error", err)
		}
	}
	s.c.log.Info("Gave the events in hand back for the binding's next holder", "events", len(held))
}

func (s *serving) terminate(e *entry, why error) {
	s.c.log.Error("Dropping an ingress event that can never be accepted", "seq", e.seq, "error", why)
	if m, ok := s.tr.finish(e); ok {
		_ = m.TermWithReason(why.Error())
	}
}

func (s *serving) stop(err error) {
	select {
	case s.fenced <- err:
	default:
	}
}
