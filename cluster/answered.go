package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/names"
)

// What the hosts answered. A host that reads a thread back from the
// platform (its root, or the messages a dead instance may have taken)
// must not run again what another host answered, and its own journal
// knows only what it took itself. So the holder of a binding records in
// the bucket each message it answers, right before the reply is posted
// (once the event is settled in the stream), and every host reads the
// record before it accepts a message read back. The record outlives the
// stream's duplicate window (an hour) by far: a thread can move to
// another host weeks after it started.

// AnsweredTTL is how long a record that a message was answered is kept.
// A thread whose root is older and that moves to another host has the
// root taken as answered only if it is younger (the engine's rule).
const AnsweredTTL = 30 * 24 * time.Hour

// Answer records that this host answers message id of binding b. Only the
// binding's holder may write it (Permissions).
func (n *Node) Answer(ctx context.Context, b names.Binding, id string) error {
	key := names.Answered(b, id)
	_, err := n.kv.Create(ctx, key, []byte(n.s.Host), jetstream.KeyTTL(AnsweredTTL))
	switch {
	case err == nil, errors.Is(err, jetstream.ErrKeyExists):
		return nil
	case isTTLRefused(err):
		// A bucket made before records expired, not updated yet (`cluster
		// init`): kept without an expiry rather than not at all.
		if _, err := n.kv.Create(ctx, key, []byte(n.s.Host)); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("recording message %s as answered: %w", id, err)
		}
		return nil
	}
	return fmt.Errorf("recording message %s as answered: %w", id, err)
}

// Answered says whether some host recorded message id of binding b as
// answered within AnsweredTTL.
func (n *Node) Answered(ctx context.Context, b names.Binding, id string) (bool, error) {
	_, err := n.kv.Get(ctx, names.Answered(b, id))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false, nil
	}
	return false, fmt.Errorf("reading whether message %s was answered: %w", id, err)
}

// isTTLRefused says whether err is the server refusing a per-message TTL
// on a stream that does not allow them.
func isTTLRefused(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeTTLDisabled
}

// errCodeTTLDisabled is JetStream's "per-message TTL is disabled"
// (JSMessageTTLDisabledErr), which nats.go has no constant for.
const errCodeTTLDisabled jetstream.ErrorCode = 10166
