package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/trigger"
)

// The engine's side of a cluster (docs/cluster.md). The adapters of a
// cluster host publish what they receive instead of handing it to the
// engine; the host that holds a binding's lease consumes the binding's
// events and hands each to Accept, which journals it as HandleMessage
// would, with the event's Delivery kept beside the journal entry. The
// stream, not the journal, then says what runs: an event is acknowledged
// in the stream only at its durable end (the reply settled, a cancel, a
// refusal), so a standby that takes the lease gets every event this host
// had not finished; and an entry this host journaled runs here only while
// its delivery's fence holds. Entries of an earlier run or tenure are
// parked: they run again only when the stream delivers them again (then
// nobody else finished them); one whose event the stream no longer holds
// is recovered here only if its reply was being posted (at once when this
// host settled it, else once this host holds the lease), and dropped when
// a later tenure finished it (settleParked).
//
// The rules, in the order a message meets them:
//   - Accept checks the fence right before the journal write and stores
//     the fence's token in the entry;
//   - a duplicate that is still pending here gets the new delivery (and,
//     when parked, is queued again); one finished here is settled;
//   - before an item runs, and before its journal ack, the fence is
//     checked: a failed one parks the item (no ack anywhere);
//   - the reply is posted only after the event is settled (the server
//     confirmed the ack, which the journal then records): an owner cut
//     off right then does not post, and the next holder runs the turn
//     again and posts the reply once;
//   - a tenure's end interrupts the binding's running turns, which then
//     end fenced: parked, unacknowledged.

// ClusterOptions join the engine to a cluster; see Engine.JoinCluster.
type ClusterOptions struct {
	// Host is this host's cluster.host, for the notice a conversation
	// gets when it moves here.
	Host string
	// Clustered says whether a platform instance's events come through
	// the cluster (every one but the terminal, which is the host's own).
	Clustered func(platform string) bool
	// Standby says whether this host serves the binding of platform and
	// channel (as the config writes it) as a standby.
	Standby func(platform, channel string) bool
	// Inbound, when set, is the handler an adapter runs with instead of
	// the engine (the cluster's publisher); nil for the engine itself.
	Inbound func(platform string) platform.Handler
	// InStream, when set, says whether the ingress stream still holds
	// the event of sequence seq (false: it was settled, and nobody gets it
	// again).
	InStream func(ctx context.Context, seq uint64) (bool, error)
	// Status, when set, is the cluster's report for !status (owner,
	// standbys, lease age, each host's health).
	Status func(ctx context.Context) (string, error)
}

// statusTimeout bounds the read of the cluster's report for !status.
const statusTimeout = 5 * time.Second

// clusterStatus is the cluster's part of !status: "" outside a cluster.
func (e *Engine) clusterStatus() string {
	if e.cluster == nil || e.cluster.Status == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(e.bg, statusTimeout)
	defer cancel()
	text, err := e.cluster.Status(ctx)
	if err != nil {
		e.log.Warn("Reading the cluster's status failed", "error", err)
		return "\n\nCluster: could not be read right now (the log has the details)."
	}
	return "\n\n" + strings.TrimRight(text, "\n")
}

// errFenced ends a turn whose binding's lease this host lost: it leaves
// its message unacknowledged for the next holder, and says nothing.
var errFenced = errors.New("the binding's lease was lost")

// settleTimeout bounds the wait for the server to confirm an ack before a
// reply is posted.
const settleTimeout = 5 * time.Second

// JoinCluster makes the engine the consumer of a cluster's ingress: call it
// before Run, once. The returned handler is what cluster.Node.ServeBinding
// gets for each binding this host serves.
func (e *Engine) JoinCluster(o ClusterOptions) *ClusterIngress {
	e.cluster = &o
	return &ClusterIngress{e: e}
}

// inbound is the handler adapter a runs with: the engine, or in a
// cluster the publisher that hands a's events to their binding's owner.
func (e *Engine) inbound(a platform.Adapter) platform.Handler {
	if e.cluster != nil && e.cluster.Inbound != nil {
		if h := e.cluster.Inbound(a.Name()); h != nil {
			return h
		}
	}
	return e
}

// clustered says whether the conversation of a platform instance is fed
// by the cluster's stream.
func (e *Engine) clustered(plat string) bool {
	return e.cluster != nil && e.cluster.Clustered != nil && e.cluster.Clustered(plat)
}

// ClusterIngress implements ingress.Handler and cluster.TenureHandler.
type ClusterIngress struct{ e *Engine }

var _ ingress.Handler = (*ClusterIngress)(nil)

// Accept journals one event of the stream (see the rules above).
func (c *ClusterIngress) Accept(ctx context.Context, d *ingress.Delivery) (ingress.Result, error) {
	// Not before what a crash left is recovered (Run).
	select {
	case <-c.e.runs.ready:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if err := d.Fence.Check(); err != nil {
		return 0, err
	}
	switch d.Event.Kind {
	case ingress.KindAction:
		if err := c.e.HandleAction(ctx, d.Event.Action.PlatformAction()); err != nil {
			return 0, err
		}
		return ingress.Settled, nil
	case ingress.KindRun:
		return c.acceptRun(ctx, d)
	case ingress.KindMessage:
	default:
		return 0, fmt.Errorf("%w: kind %q", ingress.ErrPoison, d.Event.Kind)
	}
	// Attachments travel by reference: the adapter of this host fetches
	// them (platform.AttachmentOpener) before the turn.
	m := d.Event.Message.PlatformMessage(nil)
	// An adapter that remembers what it received, for History (Telegram's,
	// whose Bot API cannot read a chat back), learns what another host
	// received as if it had itself: the poller may be elsewhere.
	if a, ok := c.e.adapter(m.Target.Platform); ok {
		if sn, ok := a.(platform.SeenNoter); ok {
			sn.NoteSeen(m)
		}
	}
	key := keyOf(m.Target)
	known := c.e.hasSession(key)
	res, err := c.e.handleMessage(ctx, m, d)
	if err != nil {
		return 0, err
	}
	switch res.Status {
	case platform.Duplicate:
		return c.e.reattach(m, d)
	case platform.Queued:
		s := c.e.liveSession(key)
		if s == nil || !s.jr.holds(m.ID) {
			return ingress.Settled, nil // a command that acted at once, or done already
		}
		if !known && c.moved(m, d) {
			s.notice(movedText(c.e.cluster.Host, d))
		}
		return ingress.Journaled, nil
	}
	return ingress.Settled, nil // ignored, or refused with the user told
}

// acceptRun journals a run without a person that a schedule or a webhook
// on some host published for this binding. It is settled in the stream
// once journaled here (or refused, or journaled before): from then on the
// journal runs it, as it runs a run submitted on this host.
func (c *ClusterIngress) acceptRun(ctx context.Context, d *ingress.Delivery) (ingress.Result, error) {
	r := d.Event.Run.TriggerRun()
	err := c.e.Submit(ctx, r)
	switch {
	case err == nil, errors.Is(err, trigger.ErrDuplicate):
		return ingress.Settled, nil
	case errors.Is(err, trigger.ErrRefused):
		c.e.log.Warn("A run from the cluster's stream was refused", "platform", r.Platform, "channel", r.Channel,
			"run_id", r.ID, "error", err)
		return ingress.Settled, nil
	}
	return 0, err
}

// moved says whether a conversation new to this host had run elsewhere:
// its event was delivered before (to the host that died or lost the
// lease), or this host stands by for the binding and the message does not
// start its conversation: a reply in a Slack or Discord thread that
// started before, or any message of a conversation without threads (a
// Telegram chat, a Slack DM, a Discord channel, whose Thread is ""). A
// message that starts its own thread (a Slack mention, a Discord message
// given a thread of its own) is a new conversation wherever it runs.
func (c *ClusterIngress) moved(m platform.Message, d *ingress.Delivery) bool {
	if d.NumDelivered > 1 {
		return true
	}
	o := c.e.cluster
	continues := m.Target.Thread != m.Target.MessageID
	return continues && o.Standby != nil && o.Standby(d.Event.Binding.Platform, d.Event.Binding.Channel)
}

func movedText(host string, d *ingress.Delivery) string {
	why := "the host that served it stopped answering"
	if d.NumDelivered <= 1 {
		why = "the host that served it is not serving this channel now"
	}
	return fmt.Sprintf("This conversation moved to host %s (%s). It continues in a new Claude session: "+
		"what was said before is not in its context.", orDefault(host, "?"), why)
}

// reattach handles a redelivered event that was journaled before: still
// pending here, it is Journaled again under the new delivery (queued
// again when it was parked); finished here, it is Settled.
func (e *Engine) reattach(m platform.Message, d *ingress.Delivery) (ingress.Result, error) {
	b, ok := e.resolve(m.Target.Platform, m.Target.Channel)
	if !ok {
		return ingress.Settled, nil
	}
	a, ok := e.adapter(m.Target.Platform)
	if !ok {
		return 0, fmt.Errorf("%w: no adapter named %q", ingress.ErrPoison, m.Target.Platform)
	}
	s, err := e.session(b, m, a)
	if err != nil {
		return 0, err
	}
	held, err := s.jr.reattach(m.ID, d, s.mb)
	if err != nil {
		return 0, err
	}
	if !held {
		return ingress.Settled, nil
	}
	s.log.Info("A redelivered message is pending here: it runs under the new delivery", "message_id", m.ID,
		"deliveries", d.NumDelivered)
	return ingress.Journaled, nil
}

// settleParked decides what becomes of the parked entries of s whose
// event the stream may no longer hold, which therefore come to no host
// again:
//   - an entry whose event this host settled (the server confirmed it)
//     while its reply was being posted is recovered at once: nobody else
//     has the event, so this host alone posts the reply (read back from
//     the transcript, looked up on the platform first, posted once);
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
func (e *Engine) settleParked(s *session) {
	if s.jr.cl == nil || e.cluster == nil || e.cluster.InStream == nil {
		return
	}
	cur := e.tenures.fence(s.binding.Platform, s.binding.Channel)
	s.jr.cl.mu.Lock()
	var cands []workItem
	for _, it := range s.jr.cl.parked {
		switch {
		case it.streamSeq == 0:
		case it.settled && it.replying, cur != nil && (it.replying || it.fence != cur.Token()):
			cands = append(cands, it)
		}
	}
	s.jr.cl.mu.Unlock()
	for _, it := range cands {
		if it.settled && it.replying {
			e.recoverParked(s, it, "A message this host settled before it stopped, its reply not posted: recovering it here")
			continue
		}
		ctx, cancel := context.WithTimeout(e.bg, settleTimeout)
		in, err := e.cluster.InStream(ctx, it.streamSeq)
		cancel()
		if err != nil {
			s.log.Warn("Asking the stream about a parked message failed; it stays parked", "message_id", it.inboxID, "error", err)
			continue
		}
		switch {
		case in:
			// Not settled: it is delivered again, to whoever holds the lease.
		case it.replying:
			e.recoverParked(s, it, "A message whose reply was being posted when this host stopped is settled: recovering it here, the reply looked up before it is posted")
		default:
			s.jr.drop(it, cur.Token())
		}
	}
}

// recoverParked queues parked entry it again, to be recovered (recovery.go).
func (e *Engine) recoverParked(s *session, it workItem, why string) {
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

// tenures are the fences of the cluster bindings this host serves now.
type tenures struct {
	mu sync.Mutex // guards m
	m  map[names.Binding]*kvlease.Fence
}

func (t *tenures) set(b names.Binding, f *kvlease.Fence) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[names.Binding]*kvlease.Fence{}
	}
	t.m[b] = f
}

// end forgets b's tenure f (not a later one).
func (t *tenures) end(b names.Binding, f *kvlease.Fence) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[b] == f {
		delete(t.m, b)
	}
}

// fence is the fence of this host's tenure of the binding of platform and
// channel (as the config writes them) while it holds; nil otherwise.
func (t *tenures) fence(platform, channel string) *kvlease.Fence {
	t.mu.Lock()
	f := t.m[names.Binding{Platform: platform, Channel: channel}]
	t.mu.Unlock()
	if f == nil || f.Check() != nil {
		return nil
	}
	return f
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
// the uuid it was journaled with, or for an event of a cluster's stream a
// key every host derives alike from the platform's message id, so that a
// host that recovers a reply after a kill finds it when another host,
// which got the event again, posted it.
func replyKey(it workItem) string {
	if it.streamSeq == 0 || it.inboxID == "" {
		return it.uuid
	}
	sum := sha256.Sum256([]byte(it.msg.Target.Platform + "\x00" + it.inboxID))
	return "m-" + hex.EncodeToString(sum[:16])
}

// liveSession is the conversation's session in memory, or nil.
func (e *Engine) liveSession(key string) *session {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sessions[key]
}

// StartTenure is called when this host starts serving binding b. Its
// conversations' parked entries are decided (settleParked): entries of an
// earlier tenure that a later holder finished are dropped, replies this
// host was posting are recovered once the stream no longer holds them.
func (c *ClusterIngress) StartTenure(ctx context.Context, b names.Binding, f *kvlease.Fence) error {
	e := c.e
	select {
	case <-e.runs.ready: // the journals a crash left are open
	case <-ctx.Done():
		return ctx.Err()
	}
	e.log.Info("Serving a cluster binding", "platform", b.Platform, "channel", b.Channel, "token", f.Token())
	e.tenures.set(b, f)
	for _, s := range e.bindingSessions(b) {
		e.settleParked(s)
	}
	return nil
}

// bindingSessions are the sessions in memory of binding b.
func (e *Engine) bindingSessions(b names.Binding) []*session {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ss []*session
	for _, s := range e.sessions {
		if s.binding.Platform == b.Platform && s.binding.Channel == b.Channel {
			ss = append(ss, s)
		}
	}
	return ss
}

// EndTenure interrupts the running turns of binding b: they end fenced,
// their messages parked and unacknowledged, for the next holder.
func (c *ClusterIngress) EndTenure(b names.Binding, f *kvlease.Fence, why error) {
	e := c.e
	e.tenures.end(b, f)
	ss := e.bindingSessions(b)
	e.log.Warn("Stopped serving a cluster binding; its running turns stop unanswered, for the next holder",
		"platform", b.Platform, "channel", b.Channel, "token", f.Token(), "sessions", len(ss), "error", why)
	for _, s := range ss {
		s.mb.pushControl(control{kind: ctrlFence, to: s.to})
	}
}

// clusterLedger links a clustered conversation's journal to the stream.
type clusterLedger struct {
	mu sync.Mutex
	// deliveries are the journaled ids queued or running here, with the
	// delivery to acknowledge at their durable end.
	deliveries map[string]*ingress.Delivery
	// parked are pending in the journal and not run here until the stream
	// delivers them again.
	parked map[string]workItem
}

func newClusterLedger() *clusterLedger {
	return &clusterLedger{deliveries: map[string]*ingress.Delivery{}, parked: map[string]workItem{}}
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
func (j *journal) reattach(id string, d *ingress.Delivery, mb *mailbox) (bool, error) {
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
	if err := d.Fence.Check(); err != nil {
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
func (j *journal) track(id string, d *ingress.Delivery) {
	j.cl.mu.Lock()
	j.cl.deliveries[id] = d
	j.cl.mu.Unlock()
}

// drop acknowledges parked entry it in the journal without running it: a
// later holder of the binding's lease (of tenure token) finished it.
func (j *journal) drop(it workItem, token uint64) {
	j.cl.mu.Lock()
	_, still := j.cl.parked[it.inboxID]
	delete(j.cl.parked, it.inboxID)
	j.cl.mu.Unlock()
	in := j.file()
	if !still || in == nil {
		return
	}
	j.log.Info("A message of an earlier tenure was finished by a later holder of the lease: dropped here",
		"message_id", it.inboxID, "fence", it.fence, "token", token)
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
	return d.Fence.Check()
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
// failed or the server did not confirm the ack, and the next holder of
// the lease runs it again.
func (j *journal) settleFirst(bg context.Context, it workItem) bool {
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
	if d == nil {
		return true
	}
	if err := d.Fence.Check(); err != nil {
		j.park(it, err)
		return false
	}
	ctx, cancel := context.WithTimeout(bg, settleTimeout)
	defer cancel()
	if err := d.Settle(ctx); err != nil {
		j.park(it, err)
		return false
	}
	// Settled by this host: no host gets the event again, so after a
	// kill this host's recovery alone posts the reply (settleParked).
	if in := j.file(); in != nil {
		if err := in.MarkSettled(it.inboxID); err != nil {
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
