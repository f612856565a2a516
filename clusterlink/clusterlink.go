// Package clusterlink joins the engine to the cluster: the cluster's
// deliveries, fences, record of answered messages and store of the
// conversations' context as the contracts the engine holds them to
// (engine.Delivery, engine.Fence, engine.Answers, engine.Contexts,
// engine.ClusterEvent), and the engine's ingress as the handler the
// cluster serves each binding's events to. It holds no logic of either: the engine decides what an event means, the
// cluster how it travels; neither imports the other.
package clusterlink

import (
	"context"
	"errors"
	"fmt"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/engine"
	"github.com/cc-connect/cc-connect/platform"
)

// Handler is the engine's ingress as the cluster's handler for the
// bindings this host serves.
type Handler struct {
	Ingress *engine.ClusterIngress
	// Started and Ended, when set, are told of each tenure once the
	// engine was (the binary wakes the binding's schedules).
	Started func(b names.Binding, f *kvlease.Fence)
	Ended   func(b names.Binding, f *kvlease.Fence)
}

var (
	_ ingress.Handler       = Handler{}
	_ cluster.TenureHandler = Handler{}
	_ engine.Delivery       = delivery{}
	_ engine.Fence          = (*kvlease.Fence)(nil)
	_ engine.Answers        = Answers{}
	_ engine.Contexts       = Contexts{}
	_ engine.Replies        = Replies{}
	_ engine.Approvals      = Approvals{}
)

// Approvals is the cluster's store of the requests the conversations'
// turns wait on, as the engine reads and writes it.
type Approvals struct{ Node *cluster.Node }

// PutApprovals stores the requests of the conversation at to.
func (x Approvals) PutApprovals(ctx context.Context, b binding.Key, to platform.Target, rec []byte) error {
	return cluster.ApprovalsOf(x.Node).Put(ctx, nb(b), names.Conversation(to.Channel, to.Thread), rec)
}

// Approvals reads them back; nil when none are stored.
func (x Approvals) Approvals(ctx context.Context, b binding.Key, to platform.Target) ([]byte, error) {
	return cluster.ApprovalsOf(x.Node).Get(ctx, nb(b), names.Conversation(to.Channel, to.Thread))
}

// RemoveApprovals removes them.
func (x Approvals) RemoveApprovals(ctx context.Context, b binding.Key, to platform.Target) error {
	return cluster.ApprovalsOf(x.Node).Remove(ctx, nb(b), names.Conversation(to.Channel, to.Thread))
}

// Replies is the cluster's store of the replies being posted, as the
// engine reads and writes it.
type Replies struct{ Node *cluster.Node }

// PutReply stores the reply being posted in the conversation at to.
func (x Replies) PutReply(ctx context.Context, b binding.Key, to platform.Target, rec []byte) (uint64, error) {
	return cluster.RepliesOf(x.Node).PutReply(ctx, nb(b), names.Conversation(to.Channel, to.Thread), rec)
}

// Reply is the reply being posted in the conversation at to.
func (x Replies) Reply(ctx context.Context, b binding.Key, to platform.Target) (engine.StoredReply, error) {
	s, err := cluster.RepliesOf(x.Node).Reply(ctx, nb(b), names.Conversation(to.Channel, to.Thread))
	return engine.StoredReply{Value: s.Value, Revision: s.Revision}, err
}

// Replies are the replies being posted in binding b's conversations.
func (x Replies) Replies(ctx context.Context, b binding.Key) ([]engine.StoredReply, error) {
	ss, err := cluster.RepliesOf(x.Node).Replies(ctx, nb(b))
	out := make([]engine.StoredReply, 0, len(ss))
	for _, s := range ss {
		out = append(out, engine.StoredReply{Value: s.Value, Revision: s.Revision})
	}
	return out, err
}

// RemoveReply removes the posted reply of the conversation at to.
func (x Replies) RemoveReply(ctx context.Context, b binding.Key, to platform.Target, revision uint64) error {
	return cluster.RepliesOf(x.Node).RemoveReply(ctx, nb(b), names.Conversation(to.Channel, to.Thread), revision)
}

func nb(b binding.Key) names.Binding { return names.Binding{Platform: b.Platform, Channel: b.Channel} }

// Contexts is the cluster's store of the conversations' context, as the
// engine reads and writes it.
type Contexts struct{ Node *cluster.Node }

// PutContext stores the context of the conversation at to in binding b.
func (x Contexts) PutContext(ctx context.Context, b binding.Key, to platform.Target, c engine.Context, unchanged int64) (int, error) {
	return x.Node.PutContext(ctx, names.Binding{Platform: b.Platform, Channel: b.Channel}, names.Conversation(to.Channel, to.Thread),
		c.SessionID, c.Workspace, c.Transcript, c.Size, unchanged)
}

// GetContext reads the context of the conversation at to in binding b.
func (x Contexts) GetContext(ctx context.Context, b binding.Key, to platform.Target) (engine.Context, error) {
	h, tr, err := x.Node.GetContext(ctx, names.Binding{Platform: b.Platform, Channel: b.Channel}, names.Conversation(to.Channel, to.Thread))
	if errors.Is(err, cluster.ErrNoContext) {
		return engine.Context{}, engine.ErrNoContext
	}
	return engine.Context{SessionID: h.SessionID, Workspace: h.Workspace, Host: h.Host, Transcript: tr, Size: h.Size, NotReplicated: h.NotReplicated}, err
}

// Limit is the largest transcript the cluster stores.
func (Contexts) Limit() int64 { return cluster.ContextLimit }

// Answers is the cluster's record of the messages its hosts answered, as
// the engine reads and writes it.
type Answers struct{ Node *cluster.Node }

// Answered is the host that answered message id of binding b, "" if none.
func (a Answers) Answered(ctx context.Context, b binding.Key, id string) (string, error) {
	return a.Node.Answered(ctx, names.Binding{Platform: b.Platform, Channel: b.Channel}, id)
}

// Answer records that this host answers message id of binding b in the
// conversation at to.
func (a Answers) Answer(ctx context.Context, b binding.Key, to platform.Target, id string) error {
	return a.Node.Answer(ctx, names.Binding{Platform: b.Platform, Channel: b.Channel}, names.Conversation(to.Channel, to.Thread), id)
}

// Accept hands one event of the stream to the engine.
func (h Handler) Accept(ctx context.Context, d *ingress.Delivery) (ingress.Result, error) {
	ev, err := event(d.Event)
	if err != nil {
		return 0, err
	}
	out, err := h.Ingress.Accept(ctx, ev, delivery{d})
	switch {
	case errors.Is(err, engine.ErrUnknownEvent):
		return 0, fmt.Errorf("%w: %v", ingress.ErrPoison, err)
	case err != nil:
		return 0, err
	case out == engine.Journaled:
		return ingress.Journaled, nil
	}
	return ingress.Settled, nil
}

// StartTenure tells the engine this host serves b from now on.
func (h Handler) StartTenure(ctx context.Context, b names.Binding, f *kvlease.Fence) error {
	if err := h.Ingress.StartTenure(ctx, key(b), f); err != nil {
		return err
	}
	if h.Started != nil {
		h.Started(b, f)
	}
	return nil
}

// EndTenure tells the engine this host stopped serving b.
func (h Handler) EndTenure(b names.Binding, f *kvlease.Fence, why error) {
	if h.Ended != nil {
		h.Ended(b, f)
	}
	h.Ingress.EndTenure(key(b), f, why)
}

func key(b names.Binding) binding.Key { return binding.Key{Platform: b.Platform, Channel: b.Channel} }

// event is a stream's event as the engine takes it.
func event(ev ingress.Event) (engine.ClusterEvent, error) {
	out := engine.ClusterEvent{Binding: binding.Key{Platform: ev.Binding.Platform, Channel: ev.Binding.Channel}}
	switch {
	case ev.Kind == ingress.KindMessage && ev.Message != nil:
		m := ev.Message.PlatformMessage(nil)
		out.Message = &m
	case ev.Kind == ingress.KindAction && ev.Action != nil:
		a := ev.Action.PlatformAction()
		out.Action = &a
	case ev.Kind == ingress.KindRun && ev.Run != nil:
		r := ev.Run.TriggerRun()
		out.Run = &r
	default:
		return out, fmt.Errorf("%w: kind %q", ingress.ErrPoison, ev.Kind)
	}
	return out, nil
}

// delivery is an ingress delivery as the engine keeps it.
type delivery struct{ d *ingress.Delivery }

func (x delivery) Fence() engine.Fence {
	if x.d.Fence == nil {
		return nil
	}
	return x.d.Fence
}
func (x delivery) Seq() uint64                      { return x.d.Seq }
func (x delivery) Deliveries() int                  { return int(x.d.NumDelivered) }
func (x delivery) Done()                            { x.d.Done() }
func (x delivery) Settle(ctx context.Context) error { return x.d.Settle(ctx) }
