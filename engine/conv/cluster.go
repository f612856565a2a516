package conv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// Fence is the lease a clustered conversation's durable writes are made
// under: Check right before each write (nil: still held), Token stored
// with the write. The cluster implements it (cluster/kvlease).
type Fence interface {
	Check() error
	Token() uint64
}

// Delivery is an event the cluster's stream delivered to this host, as a
// conversation keeps it until its durable end. The cluster implements it
// (cluster/ingress); a conversation alone has none.
type Delivery interface {
	// Fence is the lease the event was delivered under.
	Fence() Fence
	// Seq is the event's sequence in the stream.
	Seq() uint64
	// Deliveries counts its deliveries (more than 1: delivered before,
	// perhaps to another host).
	Deliveries() int
	// Done acknowledges it at its durable end, from any goroutine; again
	// does nothing.
	Done()
	// Settle is Done, confirmed by the server: nil once no host gets the
	// event again. On an error it is delivered again, perhaps elsewhere,
	// and its outcome must not be shown here.
	Settle(ctx context.Context) error
}

// errFenced ends a turn whose binding's lease this host lost: it leaves
// its message unacknowledged for the next holder, and says nothing.
var errFenced = errors.New("the binding's lease was lost")

// settleTimeout bounds the wait for the server to confirm an ack before a
// reply is posted.
const settleTimeout = 5 * time.Second

// settleParked decides what becomes of the parked entries of s whose
// event the stream may no longer hold, which therefore come to no host
// again:
//   - an entry whose event this host settled (the server confirmed it)
//     while its reply was being posted is recovered at once: nobody else
//     has the event, so this host alone posts the reply (read back from
//     the transcript, looked up on the platform first, posted once);
//   - so is one whose settlement the journal does not hold but the
//     cluster's record of answered messages names this host for (it is
//     written only once the server confirmed the settlement: answered.go);
//   - an entry whose reply was being posted when this host stopped, its
//     settlement not confirmed, waits until this host serves the binding:
//     not in the stream any more, its event was settled by this host's
//     settlement in flight or by a later holder that ran it again (which
//     posted its reply before its tenure ended), and the recovery looks
//     the reply up on the platform before it posts. Recovering it while
//     another host holds the lease could post it beside that host's;
//   - an entry journaled under an earlier tenure and not in the stream
//     any more was finished by a later holder: it is dropped, never run
//     here.
//
// Entries still in the stream stay parked: they are delivered again, to
// whoever holds the lease. It runs when a session opens and when a
// tenure starts (StartTenure).
func (c *Cluster) settleParked(s *Conversation) {
	if s.jr.cl == nil || c.InStream == nil {
		return
	}
	cur := c.fence(s.binding.Platform, s.binding.Channel)
	s.jr.cl.mu.Lock()
	var cands []workItem
	var unconfirmed []workItem
	var replying []workItem
	for _, it := range s.jr.cl.parked {
		switch {
		case it.streamSeq == 0:
		case it.replying && s.jr.cl.pending != nil:
			replying = append(replying, it)
		case it.settled && it.replying, cur != nil && (it.replying || it.fence != cur.Token()):
			cands = append(cands, it)
		case it.replying:
			unconfirmed = append(unconfirmed, it)
		}
	}
	s.jr.cl.mu.Unlock()
	for _, it := range replying {
		// Its reply may be stored for the binding's holder
		// (pendingreply.go): the record decides who posts it.
		switch take, ok := c.replyingParked(s, it, cur); {
		case !ok:
		case take:
			cands = append(cands, it)
		}
	}
	for _, it := range unconfirmed {
		// Killed between the settlement and its mark in the journal:
		// the record of answered messages names this host only once
		// the server confirmed the settlement, so it is as good as the
		// mark, and the reply need not wait for the lease.
		if s.e.cluster.answeredHere(s.e.bg, s.binding.Key(), it.inboxID) {
			it.settled = true
			cands = append(cands, it)
		}
	}
	for _, it := range cands {
		if it.settled && it.replying {
			c.recoverParked(s, it, "A message this host settled before it stopped, its reply not posted: recovering it here")
			continue
		}
		ctx, cancel := context.WithTimeout(c.bg, settleTimeout)
		in, err := c.InStream(ctx, it.streamSeq)
		cancel()
		if err != nil {
			s.log.Warn("Asking the stream about a parked message failed; it stays parked", "message_id", it.inboxID, "error", err)
			continue
		}
		switch {
		case in:
			// Not settled: it is delivered again, to whoever holds the lease.
		case it.replying:
			c.recoverParked(s, it, "A message whose reply was being posted when this host stopped is settled: recovering it here, the reply looked up before it is posted")
		default:
			s.jr.drop(it, cur.Token(), "A message of an earlier tenure was finished by a later holder of the lease: dropped here")
		}
	}
}

// replyingParked decides a parked entry whose reply was being posted
// when this host stopped, where replies are stored in the cluster
// (pendingreply.go); take says it goes on to the rules of settleParked
// (ok false: decided here, or left parked).
//   - The conversation's record still names it: its reply is still to be
//     posted, by the binding's holder, in order. This host, holding the
//     lease, goes on (the stream, then the transcript, decide); otherwise
//     the entry stays parked, and the holder posts the reply
//     (Stream.PostPending).
//   - The record no longer names it and this host settled it having
//     stored it: another host posted it (the record goes only once the
//     reply is posted). Dropped here: posting it would be late, after the
//     conversation's newer replies.
//   - Not settled here (or settled by a version that did not store the
//     reply): while the stream holds the event it runs again under its
//     next delivery; once it does not, another host ran it and posted
//     the reply, or this host's settlement landed with no record stored
//     (a kill before the write): dropped, or, for an entry of a
//     version that did not store replies, recovered as it did.
func (c *Cluster) replyingParked(s *Conversation, it workItem, cur Fence) (take, ok bool) {
	ctx, cancel := context.WithTimeout(c.bg, settleTimeout)
	defer cancel()
	named, _, err := s.jr.cl.pending.names(ctx, it.inboxID)
	if err != nil {
		s.log.Warn("Reading whether a reply is still to be posted failed; its message stays parked", "message_id", it.inboxID, "error", err)
		return false, false
	}
	switch {
	case named:
		return cur != nil, cur != nil
	case it.settled && it.replicated:
		s.jr.drop(it, 0, "Its reply was posted by another host that served the binding: dropped here")
		return false, false
	case it.settled:
		return true, true // settled by an earlier version: recovered as it was
	}
	in, err := c.InStream(ctx, it.streamSeq)
	switch {
	case err != nil:
		s.log.Warn("Asking the stream about a parked message failed; it stays parked", "message_id", it.inboxID, "error", err)
	case !in:
		s.jr.drop(it, 0, "Its event was settled and no stored reply names it: another host answered it; dropped here")
	}
	return false, false
}

// recoverParked queues parked entry it again, to be recovered (recovery.go).
func (c *Cluster) recoverParked(s *Conversation, it workItem, why string) {
	s.jr.cl.mu.Lock()
	_, still := s.jr.cl.parked[it.inboxID]
	delete(s.jr.cl.parked, it.inboxID)
	s.jr.cl.mu.Unlock()
	if !still {
		return // redelivered meanwhile: it runs under that delivery
	}
	s.log.Info(why, "message_id", it.inboxID)
	it.recovered = true
	s.mb.push(it)
}

// replyingFromStream says whether a journal holds an entry from the
// stream whose reply was being posted: its session is opened at start, so
// that queueSettled can recover it if the stream settled it.
func replyingFromStream(pending []inbox.Entry) bool {
	for _, en := range pending {
		if en.Replying && en.StreamSeq != 0 {
			return true
		}
	}
	return false
}

// replyKey names an item's reply on the platform (platform.Reply.Key):
// the uuid it was journaled with, or for a message of a clustered
// conversation (an event of the stream, or one read back from its thread)
// a key every host derives alike from the platform's message id, so that a
// host that recovers a reply after a kill finds it when another host,
// which got the event again or read the message back, posted it.
func replyKey(it workItem, clustered bool) string {
	if it.inboxID == "" || it.streamSeq == 0 && !clustered {
		return it.uuid
	}
	sum := sha256.Sum256([]byte(it.msg.Target.Platform + "\x00" + it.inboxID))
	return "m-" + hex.EncodeToString(sum[:16])
}

// clusterLedger links a clustered conversation's journal to the stream.
type clusterLedger struct {
	mu sync.Mutex
	// deliveries are the journaled ids queued or running here, with the
	// delivery to acknowledge at their durable end.
	deliveries map[string]Delivery
	// parked are pending in the journal and not run here until the stream
	// delivers them again.
	parked map[string]workItem
	// answer records that this host answers a message (answered.go).
	answer func(ctx context.Context, id string) error
	// pending keeps the reply being posted in the cluster
	// (pendingreply.go); nil without a record.
	pending *pendingReplies
}

func newClusterLedger() *clusterLedger {
	return &clusterLedger{deliveries: map[string]Delivery{}, parked: map[string]workItem{}}
}

// holds says whether id was journaled here and is queued or running.
func (j *journal) holds(id string) bool {
	if j.cl == nil {
		return false
	}
	j.cl.mu.Lock()
	defer j.cl.mu.Unlock()
	_, ok := j.cl.deliveries[id]
	return ok
}

// queueable parks the entries of a clustered journal that came from the
// stream and returns the rest, to be queued.
func (j *journal) queueable(items []workItem) []workItem {
	if j.cl == nil {
		return items
	}
	j.cl.mu.Lock()
	defer j.cl.mu.Unlock()
	out := items[:0:0]
	for _, it := range items {
		if it.fence != 0 && it.inboxID != "" {
			j.cl.parked[it.inboxID] = it
			continue
		}
		out = append(out, it)
	}
	if n := len(items) - len(out); n > 0 {
		j.log.Info("Pending messages of an earlier run parked until the stream delivers them again", "parked", n)
	}
	return out
}

// reattach gives a pending id its new delivery, queueing it when parked;
// false when it is not pending here.
func (j *journal) reattach(id string, d Delivery, mb *mailbox) (bool, error) {
	if j.cl == nil {
		return false, nil
	}
	j.acceptMu.Lock()
	defer j.acceptMu.Unlock()
	if open, _, _ := mb.room(); !open {
		return false, errSessionClosed // retried: the next session takes it
	}
	j.cl.mu.Lock()
	if _, ok := j.cl.deliveries[id]; ok {
		j.cl.deliveries[id] = d
		j.cl.mu.Unlock()
		return true, nil
	}
	it, ok := j.cl.parked[id]
	if !ok {
		j.cl.mu.Unlock()
		return false, nil
	}
	if err := d.Fence().Check(); err != nil {
		j.cl.mu.Unlock()
		return false, err
	}
	delete(j.cl.parked, id)
	j.cl.deliveries[id] = d
	j.cl.mu.Unlock()
	// What a restart would do with it: the transcript tells whether the
	// CLI had it.
	it.recovered = it.kind == itemTurn && it.started
	mb.push(it)
	return true, nil
}

// track records the delivery of a just-journaled item.
func (j *journal) track(id string, d Delivery) {
	j.cl.mu.Lock()
	j.cl.deliveries[id] = d
	j.cl.mu.Unlock()
}

// drop acknowledges parked entry it in the journal without running it: a
// later holder of the binding's lease (of tenure token) finished it.
func (j *journal) drop(it workItem, token uint64, why string) {
	j.cl.mu.Lock()
	_, still := j.cl.parked[it.inboxID]
	delete(j.cl.parked, it.inboxID)
	j.cl.mu.Unlock()
	in := j.file()
	if !still || in == nil {
		return
	}
	j.log.Info(why, "message_id", it.inboxID, "fence", it.fence, "token", token)
	if err := in.Ack(it.inboxID, inbox.AckElsewhere); err != nil && !errors.Is(err, inbox.ErrNotCompacted) {
		j.log.Warn("Dropping a message of an earlier tenure from the inbox failed; it stays parked", "message_id", it.inboxID, "error", err)
	}
}

// park keeps it pending and unrun until the stream delivers it again.
func (j *journal) park(it workItem, why error) {
	if j.cl == nil || it.inboxID == "" {
		return
	}
	j.cl.mu.Lock()
	delete(j.cl.deliveries, it.inboxID)
	j.cl.parked[it.inboxID] = it
	j.cl.mu.Unlock()
	j.log.Warn("Message left unacknowledged for the binding's next holder", "message_id", it.inboxID, "error", why)
}

// fenced returns why it must not run or be acknowledged here: its
// delivery's fence failed. Nil outside a cluster and for items that did
// not come from the stream.
func (j *journal) fenced(it workItem) error {
	if j.cl == nil || it.inboxID == "" {
		return nil
	}
	j.cl.mu.Lock()
	d := j.cl.deliveries[it.inboxID]
	_, parked := j.cl.parked[it.inboxID]
	j.cl.mu.Unlock()
	if parked {
		return errFenced
	}
	if d == nil {
		return nil
	}
	return d.Fence().Check()
}

// finished acknowledges it in the stream after its journal ack.
func (j *journal) finished(it workItem) {
	if j.cl == nil || it.inboxID == "" {
		return
	}
	j.cl.mu.Lock()
	d := j.cl.deliveries[it.inboxID]
	delete(j.cl.deliveries, it.inboxID)
	j.cl.mu.Unlock()
	if d != nil {
		d.Done()
	}
}

// settleFirst settles it in the stream before its reply is posted, and
// says whether the reply may go: false (it is parked) when the fence
// failed, the reply could not be stored for the binding's next holder
// (pendingreply.go) or the server did not confirm the ack, and the next
// holder of the lease runs it again.
func (j *journal) settleFirst(bg context.Context, it workItem, reply string) bool {
	if j.cl == nil || it.inboxID == "" {
		return true
	}
	j.cl.mu.Lock()
	d := j.cl.deliveries[it.inboxID]
	_, parked := j.cl.parked[it.inboxID]
	j.cl.mu.Unlock()
	if parked {
		return false
	}
	ctx, cancel := context.WithTimeout(bg, settleTimeout)
	defer cancel()
	if d == nil {
		// Not of the stream (read back from the platform, or recovered
		// after the stream settled it): recorded all the same.
		j.answered(ctx, it)
		return true
	}
	if err := d.Fence().Check(); err != nil {
		j.park(it, err)
		return false
	}
	// Before the settlement: from then on no host gets the event again,
	// and a kill before the post leaves the reply to the binding's next
	// holder, which posts it before the conversation's next message.
	if err := j.replicateReply(ctx, it, reply); err != nil {
		j.park(it, err)
		return false
	}
	if j.killedAt(PointReplicated) {
		return false // a test's kill: the reply stored, the event not settled
	}
	if err := d.Settle(ctx); err != nil {
		j.park(it, err)
		return false
	}
	if j.killedAt(PointSettledUnrecorded) {
		return false // a test's kill: settled, not recorded as answered
	}
	// After the settlement: a record without it would keep the event's
	// next delivery from running anywhere.
	j.answered(ctx, it)
	// Settled by this host: no host gets the event again, so after a
	// kill the reply is posted by this host's recovery or, when it was
	// stored (replicateReply), by whichever host serves the binding
	// (settleParked, Stream.PostPending).
	if in := j.file(); in != nil {
		if err := in.MarkSettled(it.inboxID, j.cl.pending != nil); err != nil {
			j.log.Warn("Journaling the event's settlement failed", "message_id", it.inboxID, "error", err)
		}
	}
	j.cl.mu.Lock()
	if j.cl.deliveries[it.inboxID] == d {
		delete(j.cl.deliveries, it.inboxID)
	}
	j.cl.mu.Unlock()
	return true
}

// fence is the fence of this host's tenure of a binding while it holds
// (Cluster.Fence); nil otherwise.
func (c *Cluster) fence(platform, channel string) Fence {
	if c.Fence == nil {
		return nil
	}
	return c.Fence(platform, channel)
}

// Stream is the conversations as the cluster's stream reaches them: the
// engine's ingress asks whether one holds an event, tells one it moved
// here, hands a redelivered event to the entry waiting for it, and starts
// and ends this host's tenures of a binding.
type Stream struct{ e *Set }

// Holds says whether the conversation of key holds message id journaled
// here and queued or running, under a delivery of the cluster's stream.
func (st *Stream) Holds(key, id string) bool {
	s := st.e.live(key)
	return s != nil && s.jr.holds(id)
}

// Notice posts text in the conversation of key, when it is in memory.
func (st *Stream) Notice(key, text string) bool {
	s := st.e.live(key)
	return s != nil && s.notice(text)
}

// Reattach gives a redelivered event that was journaled here before its new
// delivery: false when it is not pending here (it was finished); queued
// again when it was parked.
func (st *Stream) Reattach(b binding.Binding, a platform.Adapter, m platform.Message, d Delivery) (bool, error) {
	s, err := st.e.session(b, m, a)
	if err != nil {
		return false, err
	}
	held, err := s.jr.reattach(m.ID, d, s.mb)
	if err == nil && held {
		s.log.Info("A redelivered message is pending here: it runs under the new delivery", "message_id", m.ID,
			"deliveries", d.Deliveries())
	}
	return held, err
}

// StartTenure decides the parked entries of the binding's conversations in
// memory (settleParked), now that this host serves it.
func (st *Stream) StartTenure(platform, channel string) {
	for _, s := range st.ofBinding(platform, channel) {
		st.e.cluster.settleParked(s)
	}
}

// EndTenure stops the running turns of the binding's conversations: they
// end fenced, their messages parked and unacknowledged, for the next
// holder. It returns how many conversations it told.
func (st *Stream) EndTenure(platform, channel string) int {
	ss := st.ofBinding(platform, channel)
	for _, s := range ss {
		s.mb.pushControl(control{kind: ctrlFence, to: s.to})
	}
	return len(ss)
}

// ofBinding are the conversations in memory of the binding of platform and
// channel (as the config writes them).
func (st *Stream) ofBinding(platform, channel string) []*Conversation {
	st.e.mu.Lock()
	defer st.e.mu.Unlock()
	var ss []*Conversation
	for _, s := range st.e.sessions {
		if s.binding.Platform == platform && s.binding.Channel == channel {
			ss = append(ss, s)
		}
	}
	return ss
}

// live is the conversation's session in memory, or nil.
func (e *Set) live(key string) *Conversation {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sessions[key]
}

// answered records that this host answers it, before its reply is
// posted: a host that reads its thread back does not run it again. A
// failed record is logged and the reply still goes (the record only keeps
// a read-back from running it twice; not answering would lose it).
func (j *journal) answered(ctx context.Context, it workItem) {
	if j.cl.answer == nil {
		return
	}
	if err := j.cl.answer(ctx, it.inboxID); err != nil {
		j.log.Warn("Recording a message as answered in the cluster failed; a host that reads its thread back may run it again",
			"message_id", it.inboxID, "error", err)
	}
}
