package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/platform"
)

// testLink is the engine's ingress as the cluster's handler, for these
// tests: what package clusterlink does for the binary, which imports the
// engine and so cannot serve the engine's own tests.
type testLink struct {
	ci       *ClusterIngress
	accepted *acceptedEvents // nil: not told
}

// acceptedEvents are the messages a host's ingress returned from (their
// event journaled, settled or refused), for a test to wait on.
type acceptedEvents struct {
	mu   sync.Mutex
	ids  map[string]bool
	wake chan struct{} // closed and renewed when one is added
}

func newAcceptedEvents() *acceptedEvents {
	return &acceptedEvents{ids: map[string]bool{}, wake: make(chan struct{})}
}

func (a *acceptedEvents) add(id string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ids[id] = true
	close(a.wake)
	a.wake = make(chan struct{})
}

// wait waits until the ingress returned from message id's event.
func (a *acceptedEvents) wait(t *testing.T, id string) {
	t.Helper()
	limit := time.NewTimer(waitLimit)
	defer limit.Stop()
	for {
		a.mu.Lock()
		done, wake := a.ids[id], a.wake
		a.mu.Unlock()
		if done {
			return
		}
		select {
		case <-wake:
		case <-limit.C:
			t.Fatalf("timed out waiting for the ingress to take message %s", id)
		}
	}
}

func (l testLink) Accept(ctx context.Context, d *ingress.Delivery) (ingress.Result, error) {
	ev := ClusterEvent{Binding: binding.Key{Platform: d.Event.Binding.Platform, Channel: d.Event.Binding.Channel}}
	switch {
	case d.Event.Message != nil:
		m := d.Event.Message.PlatformMessage(nil)
		ev.Message = &m
	case d.Event.Action != nil:
		a := d.Event.Action.PlatformAction()
		ev.Action = &a
	case d.Event.Run != nil:
		r := d.Event.Run.TriggerRun()
		ev.Run = &r
	}
	out, err := l.ci.Accept(ctx, ev, testDelivery{d})
	if ev.Message != nil {
		l.accepted.add(ev.Message.ID)
	}
	switch {
	case errors.Is(err, ErrUnknownEvent):
		return 0, fmt.Errorf("%w: %v", ingress.ErrPoison, err)
	case err != nil:
		return 0, err
	case out == Journaled:
		return ingress.Journaled, nil
	}
	return ingress.Settled, nil
}

func (l testLink) StartTenure(ctx context.Context, b names.Binding, f *kvlease.Fence) error {
	return l.ci.StartTenure(ctx, binding.Key{Platform: b.Platform, Channel: b.Channel}, f)
}

func (l testLink) EndTenure(b names.Binding, f *kvlease.Fence, why error) {
	l.ci.EndTenure(binding.Key{Platform: b.Platform, Channel: b.Channel}, f, why)
}

type testDelivery struct{ d *ingress.Delivery }

func (x testDelivery) Fence() Fence                     { return x.d.Fence }
func (x testDelivery) Seq() uint64                      { return x.d.Seq }
func (x testDelivery) Deliveries() int                  { return int(x.d.NumDelivered) }
func (x testDelivery) Done()                            { x.d.Done() }
func (x testDelivery) Settle(ctx context.Context) error { return x.d.Settle(ctx) }

// testStore is the cluster's records of answered messages and of the
// replies being posted, as clusterlink gives them to the binary; node is
// set once the host's node started.
type testStore struct{ node **cluster.Node }

func testConv(to platform.Target) string { return names.Conversation(to.Channel, to.Thread) }

func testBinding(b binding.Key) names.Binding {
	return names.Binding{Platform: b.Platform, Channel: b.Channel}
}

func (s testStore) Answered(ctx context.Context, b binding.Key, id string) (string, error) {
	return (*s.node).Answered(ctx, testBinding(b), id)
}

func (s testStore) Answer(ctx context.Context, b binding.Key, to platform.Target, id string) error {
	return (*s.node).Answer(ctx, testBinding(b), testConv(to), id)
}

func (s testStore) PutReply(ctx context.Context, b binding.Key, to platform.Target, rec []byte) (uint64, error) {
	return cluster.RepliesOf(*s.node).PutReply(ctx, testBinding(b), testConv(to), rec)
}

func (s testStore) Reply(ctx context.Context, b binding.Key, to platform.Target) (StoredReply, error) {
	r, err := cluster.RepliesOf(*s.node).Reply(ctx, testBinding(b), testConv(to))
	return StoredReply{Value: r.Value, Revision: r.Revision}, err
}

func (s testStore) Replies(ctx context.Context, b binding.Key) ([]StoredReply, error) {
	rs, err := cluster.RepliesOf(*s.node).Replies(ctx, testBinding(b))
	var out []StoredReply
	for _, r := range rs {
		out = append(out, StoredReply{Value: r.Value, Revision: r.Revision})
	}
	return out, err
}

func (s testStore) PutApprovals(ctx context.Context, b binding.Key, to platform.Target, rec []byte) error {
	return cluster.ApprovalsOf(*s.node).Put(ctx, testBinding(b), testConv(to), rec)
}

func (s testStore) Approvals(ctx context.Context, b binding.Key, to platform.Target) ([]byte, error) {
	return cluster.ApprovalsOf(*s.node).Get(ctx, testBinding(b), testConv(to))
}

func (s testStore) RemoveApprovals(ctx context.Context, b binding.Key, to platform.Target) error {
	return cluster.ApprovalsOf(*s.node).Remove(ctx, testBinding(b), testConv(to))
}

func (s testStore) RemoveReply(ctx context.Context, b binding.Key, to platform.Target, rev uint64) error {
	return cluster.RepliesOf(*s.node).RemoveReply(ctx, testBinding(b), testConv(to), rev)
}

func (s testStore) PutContext(ctx context.Context, b binding.Key, to platform.Target, c Context, unchanged int64) (int, error) {
	return (*s.node).PutContext(ctx, testBinding(b), testConv(to), c.SessionID, c.Workspace, c.Transcript, c.Size, unchanged)
}

func (s testStore) GetContext(ctx context.Context, b binding.Key, to platform.Target) (Context, error) {
	h, tr, err := (*s.node).GetContext(ctx, testBinding(b), testConv(to))
	if errors.Is(err, cluster.ErrNoContext) {
		return Context{}, ErrNoContext
	}
	return Context{SessionID: h.SessionID, Workspace: h.Workspace, Host: h.Host, Transcript: tr, Size: h.Size,
		NotReplicated: h.NotReplicated}, err
}

func (testStore) Limit() int64 { return cluster.ContextLimit }
