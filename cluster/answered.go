package cluster

import (
	"context"
	"encoding/json"
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

// Answer records that this host answers message id of binding b, in the
// conversation of token conversation (names.Conversation), and that this
// host last answered there (the conversation's record, for status). Only
// the binding's holder may write them (Permissions).
func (n *Node) Answer(ctx context.Context, b names.Binding, conversation, id string) error {
	key := names.Answered(b, id)
	_, err := n.kv.Create(ctx, key, []byte(n.s.Host), jetstream.KeyTTL(AnsweredTTL))
	if isTTLRefused(err) {
		// A bucket made before records expired, not updated yet (`cluster
		// init`): kept without an expiry rather than not at all.
		_, err = n.kv.Create(ctx, key, []byte(n.s.Host))
	}
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("recording message %s as answered: %w", id, err)
	}
	if conversation == "" {
		return nil
	}
	rec, err := json.Marshal(Served{Host: n.s.Host, At: time.Now().UTC()})
	if err != nil {
		return err
	}
	subject := n.s.Names.KVKey(names.Served(b, conversation))
	_, err = n.js.Publish(ctx, subject, rec, jetstream.WithMsgTTL(AnsweredTTL))
	if isTTLRefused(err) {
		_, err = n.js.Publish(ctx, subject, rec)
	}
	if err != nil {
		return fmt.Errorf("recording where conversation %s is served: %w", conversation, err)
	}
	return nil
}

// Served is a conversation's record: the host that last answered in it,
// and when (its clock), and whether its context (Claude's session and
// transcript) is replicated (context.go): "yes", "no (why)", or "" when
// the host did not say (a host of a version that did not replicate).
type Served struct {
	Host    string    `json:"host"`
	At      time.Time `json:"at"`
	Context string    `json:"context,omitempty"`
}

// Answered is the host that recorded message id of binding b as answered
// within AnsweredTTL; "" when none did.
func (n *Node) Answered(ctx context.Context, b names.Binding, id string) (string, error) {
	e, err := n.kv.Get(ctx, names.Answered(b, id))
	switch {
	case err == nil:
		return string(e.Value()), nil
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return "", nil
	}
	return "", fmt.Errorf("reading whether message %s was answered: %w", id, err)
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
