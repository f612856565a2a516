package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/trigger"
)

// The engine's side of a cluster (docs/cluster.md). The engine owns the
// contracts (conv.Delivery, conv.Fence, ClusterEvent) and the cluster
// implements them; the binary joins the two, so that no engine package
// imports the cluster's.
// The adapters of a
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
	// Answers, when set, is the record of the messages the hosts
	// answered: what a recovery that reads a thread back must not run
	// again (conv.Answers). AnsweredFor is how long it keeps a message
	// (0: for ever).
	Answers     Answers
	AnsweredFor time.Duration
	// Contexts, when set, keeps each conversation's Claude session and
	// transcript for the host that takes it over (conv.Contexts).
	Contexts Contexts
	// Replies, when set, keeps the reply a host settled and is posting,
	// for the host that takes the binding over (conv.Replies).
	Replies Replies
	// Approvals, when set, keeps the requests a conversation's turn
	// waits on, for the host that takes the binding over (conv.Approvals).
	Approvals Approvals
}

// Fence and Delivery are the contracts the engine holds the cluster to
// (conv's, under the engine's name for the binary).
type (
	Fence       = conv.Fence
	Delivery    = conv.Delivery
	Answers     = conv.Answers
	Contexts    = conv.Contexts
	Context     = conv.Context
	Replies     = conv.Replies
	StoredReply = conv.StoredReply
	Approvals   = conv.Approvals
)

// ErrNoContext: no context of the conversation is replicated.
var ErrNoContext = conv.ErrNoContext

// ClusterEvent is what the cluster's stream delivered for the binding of
// Binding (as the config writes it): a message, a button press or a run,
// exactly one of them set.
type ClusterEvent struct {
	Binding binding.Key
	Message *platform.Message
	Action  *platform.Action
	Run     *trigger.Run
}

// Outcome says what became of an event the stream delivered.
type Outcome int

const (
	// Journaled: the event runs here; its Delivery is acknowledged at its
	// durable end.
	Journaled Outcome = iota + 1
	// Settled: the event is finished (ignored, refused with the user told,
	// a command that acted at once, journaled before and done); the
	// caller acknowledges it now.
	Settled
)

// ErrUnknownEvent means an event holds none of a message, a button press
// and a run: it can never be handled, and the caller drops it.
var ErrUnknownEvent = errors.New("the event holds no message, button press or run")

// JoinCluster makes the engine the consumer of a cluster's ingress: call it
// before Run, once. The returned ingress is what the cluster hands each
// binding's events to, and its tenures.
func (e *Engine) JoinCluster(o ClusterOptions) *ClusterIngress {
	e.cluster = &o
	st := e.convs.JoinCluster(conv.Cluster{Clustered: o.Clustered, InStream: o.InStream, Fence: e.tenures.fence,
		Answers: o.Answers, AnsweredFor: o.AnsweredFor, Host: o.Host, Contexts: o.Contexts, Replies: o.Replies, Approvals: o.Approvals})
	return &ClusterIngress{e: e, st: st}
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

// ClusterIngress is the engine's side of the cluster's stream: the events
// of the bindings this host serves, and its tenures.
type ClusterIngress struct {
	e  *Engine
	st *conv.Stream

	// checked is, for each conversation this host had a record of when
	// its message came, the tenure in which its replicated context was
	// compared with that record: within one tenure no other host answers
	// it, so the bucket is read once per conversation and tenure, not for
	// every message.
	mu      sync.Mutex
	checked map[string]uint64
}

// firstInTenure says whether the conversation at key is met for the first
// time in the tenure token, and notes it.
func (c *ClusterIngress) firstInTenure(key string, token uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checked == nil {
		c.checked = make(map[string]uint64)
	}
	if c.checked[key] == token {
		return false
	}
	c.checked[key] = token
	return true
}

// Accept journals one event of the stream (see the rules above).
func (c *ClusterIngress) Accept(ctx context.Context, ev ClusterEvent, d Delivery) (Outcome, error) {
	// Not before what a crash left is recovered (Run).
	select {
	case <-c.e.convs.Ready():
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if err := d.Fence().Check(); err != nil {
		return 0, err
	}
	if c.e.isStopping() {
		// Handed over: the binding's next holder takes it from the stream.
		return 0, conv.ErrStopped
	}
	switch {
	case ev.Action != nil:
		if err := c.e.HandleAction(ctx, *ev.Action); err != nil {
			return 0, err
		}
		return Settled, nil
	case ev.Run != nil:
		return c.acceptRun(ctx, *ev.Run)
	case ev.Message == nil:
		return 0, ErrUnknownEvent
	}
	// Attachments travel by reference: the adapter of this host fetches
	// them (platform.AttachmentOpener) before the turn.
	m := *ev.Message
	// An adapter that remembers what it received, for History (Telegram's,
	// whose Bot API cannot read a chat back), learns what another host
	// received as if it had itself: the poller may be elsewhere.
	if a, ok := c.e.ads.get(m.Target.Platform); ok {
		if sn, ok := a.(platform.SeenNoter); ok {
			sn.NoteSeen(m)
		}
	}
	// Read back from its thread and answered by a host that served the
	// binding before (conv/answered.go): its own delivery runs nowhere.
	switch done, err := c.st.AnsweredElsewhere(ctx, ev.Binding, m.Target.Platform, m.ID); {
	case err != nil:
		return 0, err
	case done:
		c.e.log.Info("A message from the cluster's stream was answered by another host already; settled without running",
			"platform", m.Target.Platform, "channel", m.Target.Channel, "message_id", m.ID)
		return Settled, nil
	}
	key := conv.Key(m.Target)
	known := c.e.convs.Has(key)
	restored, why := false, ""
	if b, ok := c.e.routes.resolve(m.Target.Platform, m.Target.Channel); ok {
		// New here, or known from an earlier tenure and answered on
		// another host since: the replicated context is restored.
		if !known || c.firstInTenure(key, d.Fence().Token()) {
			restored, why = c.st.Restore(ctx, b, m.Target)
		}
		// Given again: what its turn waited on at the host before is
		// adopted before it is journaled, so that a press on the old
		// prompt, right behind it in the stream, is taken (conv/approvals.go).
		c.st.Adopt(ctx, b.Key(), m, d.Deliveries())
	}
	res, err := c.e.handleMessage(ctx, m, d)
	if err != nil {
		return 0, err
	}
	switch res.Status {
	case platform.Duplicate:
		return c.reattach(m, d)
	case platform.Queued:
		if !c.st.Holds(key, m.ID) {
			return Settled, nil // a command that acted at once, or done already
		}
		if restored || (!known && c.moved(m, ev.Binding, d)) {
			c.st.Notice(key, movedText(c.e.cluster.Host, d.Deliveries(), restored, why))
		}
		return Journaled, nil
	}
	return Settled, nil // ignored, or refused with the user told
}

// acceptRun journals a run without a person that a schedule or a webhook
// on some host published for this binding. It is settled in the stream
// once journaled here (or refused, or journaled before): from then on the
// journal runs it, as it runs a run submitted on this host.
func (c *ClusterIngress) acceptRun(ctx context.Context, r trigger.Run) (Outcome, error) {
	err := c.e.Submit(ctx, r)
	switch {
	case err == nil, errors.Is(err, trigger.ErrDuplicate):
		return Settled, nil
	case errors.Is(err, trigger.ErrRefused):
		c.e.log.Warn("A run from the cluster's stream was refused", "platform", r.Platform, "channel", r.Channel,
			"run_id", r.ID, "error", err)
		return Settled, nil
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
func (c *ClusterIngress) moved(m platform.Message, b binding.Key, d Delivery) bool {
	if d.Deliveries() > 1 {
		return true
	}
	o := c.e.cluster
	continues := m.Target.Thread != m.Target.MessageID
	return continues && o.Standby != nil && o.Standby(b.Platform, b.Channel)
}

// movedText is the notice of a conversation that moved to this host (its
// event delivered deliveries times; a reply another host settled and did
// not post counts as delivered again):
// restored with its replicated context (conv.Stream.Restore), or in a new
// session, with the reason when a replicated context could not be used
// (fresh).
func movedText(host string, deliveries int, restored bool, fresh string) string {
	why := "the host that served it stopped answering"
	if deliveries <= 1 {
		why = "the host that served it is not serving this channel now"
	}
	if restored {
		return fmt.Sprintf("This conversation moved to host %s (%s). It continues in the same Claude session, "+
			"with the conversation's history.", cmp.Or(host, "?"), why)
	}
	if fresh != "" {
		return fmt.Sprintf("This conversation moved to host %s (%s). It continues in a new Claude session, because %s: "+
			"what was said before is not in its context.", cmp.Or(host, "?"), why, fresh)
	}
	return fmt.Sprintf("This conversation moved to host %s (%s). It continues in a new Claude session: "+
		"what was said before is not in its context.", cmp.Or(host, "?"), why)
}

// reattach handles a redelivered event that was journaled before: still
// pending here, it is Journaled again under the new delivery (queued
// again when it was parked); finished here, it is Settled.
func (c *ClusterIngress) reattach(m platform.Message, d Delivery) (Outcome, error) {
	e := c.e
	b, ok := e.routes.resolve(m.Target.Platform, m.Target.Channel)
	if !ok {
		return Settled, nil
	}
	a, ok := e.ads.get(m.Target.Platform)
	if !ok {
		return 0, fmt.Errorf("%w: no adapter named %q", ErrUnknownEvent, m.Target.Platform)
	}
	held, err := c.st.Reattach(b, a, m, d)
	if err != nil {
		return 0, err
	}
	if !held {
		return Settled, nil
	}
	return Journaled, nil
}

// tenures are the fences of the cluster bindings this host serves now.
type tenures struct {
	mu sync.Mutex // guards m
	m  map[binding.Key]Fence
}

func (t *tenures) set(b binding.Key, f Fence) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[binding.Key]Fence{}
	}
	t.m[b] = f
}

// end forgets b's tenure f (not a later one).
func (t *tenures) end(b binding.Key, f Fence) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[b] == f {
		delete(t.m, b)
	}
}

// fence is the fence of this host's tenure of the binding of platform and
// channel (as the config writes them) while it holds; nil otherwise.
func (t *tenures) fence(platform, channel string) Fence {
	t.mu.Lock()
	f := t.m[binding.Key{Platform: platform, Channel: channel}]
	t.mu.Unlock()
	if f == nil || f.Check() != nil {
		return nil
	}
	return f
}

// StartTenure is called when this host starts serving binding b. Its
// conversations' parked entries are decided (settleParked): entries of an
// earlier tenure that a later holder finished are dropped, replies this
// host was posting are recovered once the stream no longer holds them;
// then the replies other hosts settled and did not post are queued, each
// before its conversation's next event (conv.Stream.PostPending).
func (c *ClusterIngress) StartTenure(ctx context.Context, b binding.Key, f Fence) error {
	e := c.e
	select {
	case <-e.convs.Ready(): // the journals a crash left are open
	case <-ctx.Done():
		return ctx.Err()
	}
	e.tenures.set(b, f)
	c.st.StartTenure(b.Platform, b.Channel)
	// What a host before this one settled and did not post goes first.
	moved := func(restored bool, why string) string { return movedText(e.cluster.Host, 2, restored, why) }
	first := func(key string) bool { return c.firstInTenure(key, f.Token()) }
	if err := c.st.PostPending(ctx, b, moved, first); err != nil {
		return fmt.Errorf("posting the replies other hosts settled: %w", err)
	}
	activity.Or(e.opts.Activity).Record(activity.Event{Time: e.now(), Kind: activity.Lease, Binding: b.Platform + "/" + b.Channel,
		Platform: b.Platform, Host: e.cluster.Host, Outcome: "taken"})
	// Last: once said, the tenure is started and in the audit trail.
	e.log.Info("Serving a cluster binding", "platform", b.Platform, "channel", b.Channel, "token", f.Token())
	return nil
}

// EndTenure interrupts the running turns of binding b: they end fenced,
// their messages parked and unacknowledged, for the next holder.
func (c *ClusterIngress) EndTenure(b binding.Key, f Fence, why error) {
	e := c.e
	e.tenures.end(b, f)
	n := c.st.EndTenure(b.Platform, b.Channel)
	e.log.Warn("Stopped serving a cluster binding; its running turns stop unanswered, for the next holder",
		"platform", b.Platform, "channel", b.Channel, "token", f.Token(), "sessions", n, "error", why)
	outcome := "released" // this host stopped serving it (shutdown, a reload)
	if why != nil && !errors.Is(why, context.Canceled) {
		outcome = "lost: " + why.Error()
	}
	activity.Or(e.opts.Activity).Record(activity.Event{Time: e.now(), Kind: activity.Lease, Binding: b.Platform + "/" + b.Channel,
		Platform: b.Platform, Host: e.cluster.Host, Outcome: outcome})
}
