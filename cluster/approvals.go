package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/names"
)

// The requests a conversation's turn waits on (a permission request, a
// question, a plan). On one host they are kept in the conversation's
// record, a file of the host's state dir; the binding's next holder, which
// runs the message again, would ask again. So the holder writes them into
// the context bucket too (beside the conversation's other context, which
// only the hosts serving the binding may read or write), as each is asked
// and answered, and removes them once the turn is over; the next holder
// adopts them before it runs the message. What the record holds is the
// engine's (conv's approvals record): here it is bytes, one key per
// conversation.

// ApprovalStore is the waiting requests, in the context bucket.
type ApprovalStore struct {
	js    jetstream.JetStream
	kv    jetstream.KeyValue
	names names.Names
}

// ApprovalsOf is n's store of the waiting requests.
func ApprovalsOf(n *Node) ApprovalStore {
	return ApprovalStore{js: n.js, kv: n.ctxKV, names: n.s.Names}
}

// Put stores the requests of conversation of binding b, replacing those
// before; they expire with the records of what was answered.
func (n ApprovalStore) Put(ctx context.Context, b names.Binding, conversation string, value []byte) error {
	if _, err := putContextKey(ctx, n.js, n.names, names.ContextApprovals(b, conversation), value); err != nil {
		return fmt.Errorf("keeping the waiting requests of conversation %s: %w", conversation, err)
	}
	return nil
}

// Get reads the requests of conversation of binding b; nil when none are
// stored.
func (n ApprovalStore) Get(ctx context.Context, b names.Binding, conversation string) ([]byte, error) {
	e, err := n.kv.Get(ctx, names.ContextApprovals(b, conversation))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the waiting requests of conversation %s: %w", conversation, err)
	}
	return e.Value(), nil
}

// Remove removes the requests of conversation of binding b.
func (n ApprovalStore) Remove(ctx context.Context, b names.Binding, conversation string) error {
	if err := n.kv.Delete(ctx, names.ContextApprovals(b, conversation)); err != nil {
		return fmt.Errorf("removing the answered requests of conversation %s: %w", conversation, err)
	}
	return nil
}
