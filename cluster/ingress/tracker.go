package ingress

import (
	"context"
	"sort"
	"sync"
)

// tracker knows which of the consumer's delivered, unacknowledged messages
// this host holds, and whether that is all of them. Order per conversation
// depends on it: JetStream delivers new messages in stream order, but a
// message redelivered after its ack wait (one a dead predecessor held, or
// one lost on the way to us) comes back after newer ones. So until every
// message the server counts as pending is in our hands, nothing newly
// arrived is handed on; once it is, what was held back goes on sorted by
// stream sequence, and from then on the delivery sequence (one per
// delivery, gapless) tells at once if a delivery went missing.
type tracker struct {
	mu       sync.Mutex // guards the fields below
	nextDseq uint64     // the delivery sequence expected next
	synced   bool
	inHand   map[uint64]*entry // by stream sequence
	held     []*entry          // arrived while not synced, in arrival order
}

// entry is one message in hand.
type entry struct {
	owner *tracker
	seq   uint64
	conv  string
	msg   ackable // the latest delivery: its reply subject acknowledges
	done  bool    // acknowledged or terminated
	given bool    // given back at a hand-over (giveUp)
	// handedOn: the handler journaled it (its turn may run here).
	handedOn bool
}

// ackable is the part of a JetStream message the tracker keeps.
type ackable interface {
	Ack() error
	DoubleAck(ctx context.Context) error
	InProgress() error
	Nak() error
	TermWithReason(reason string) error
}

// newTracker starts from the consumer's state as the server reported it:
// the last delivery sequence, and how many deliveries wait for an ack.
func newTracker(lastDseq uint64, pending int) *tracker {
	return &tracker{nextDseq: lastDseq + 1, synced: pending == 0, inHand: map[uint64]*entry{}}
}

// arrive records a delivery. It returns the entry to hand on now (nil when
// it is held back, or is a redelivery of a message already in hand, whose
// newer reply subject replaces the old one).
func (t *tracker) arrive(seq, dseq uint64, conv string, msg ackable) (e *entry, fresh bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if dseq != t.nextDseq {
		t.synced = false
	}
	t.nextDseq = dseq + 1
	if old, ok := t.inHand[seq]; ok {
		old.msg = msg
		return nil, false
	}
	e = &entry{owner: t, seq: seq, conv: conv, msg: msg}
	t.inHand[seq] = e
	if !t.synced {
		t.held = append(t.held, e)
		return nil, true
	}
	return e, true
}

// latest is the entry's latest delivery.
func (t *tracker) latest(e *entry) ackable {
	t.mu.Lock()
	defer t.mu.Unlock()
	return e.msg
}

// inSync says whether nothing is held back.
func (t *tracker) inSync() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.synced
}

// sync is told how many messages the server counts as pending. Once that
// is no more than we hold, every pending message is ours: it returns what
// was held back, in stream order.
func (t *tracker) sync(serverPending int) []*entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.synced || serverPending > len(t.inHand) {
		return nil
	}
	t.synced = true
	held := t.held
	t.held = nil
	sort.Slice(held, func(i, j int) bool { return held[i].seq < held[j].seq })
	return held
}

// finish removes e from hand; it reports false if it was already done.
func (t *tracker) finish(e *entry) (ackable, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.done {
		return nil, false
	}
	e.done = true
	delete(t.inHand, e.seq)
	return e.msg, true
}

// holding lists the messages in hand, to tell the server they are in
// progress.
func (t *tracker) holding() []ackable {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ackable, 0, len(t.inHand))
	for _, e := range t.inHand {
		out = append(out, e.msg)
	}
	return out
}

// handed notes that the handler journaled e.
func (t *tracker) handed(e *entry) {
	t.mu.Lock()
	e.handedOn = true
	t.mu.Unlock()
}

// giveUp removes the messages in hand (only those never handed on, when
// onlyUnhanded) and returns them: a later Done or Settle of any does
// nothing.
func (t *tracker) giveUp(onlyUnhanded bool) []ackable {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ackable, 0, len(t.inHand))
	for seq, e := range t.inHand {
		if onlyUnhanded && e.handedOn {
			continue
		}
		e.done, e.given = true, true
		delete(t.inHand, seq)
		out = append(out, e.msg)
	}
	if !onlyUnhanded {
		t.held = nil // they were in hand too
	}
	return out
}

// gaveBack says whether e was given back at a hand-over.
func (t *tracker) gaveBack(e *entry) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return e.given
}

// count is how many messages are in hand.
func (t *tracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.inHand)
}
