package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/names"
)

// Replies being posted. The holder of a binding settles a message's event
// in the stream before it posts the reply (so that no other host runs it
// again); a host killed between the two had the only copy of the reply,
// and posted it when it came back, after what the conversation's next
// host had answered since. So the reply is written into the context
// bucket first (with the conversation's other context, which only the
// hosts serving the binding may read), and removed once it is posted; the
// host that takes the binding next posts what it finds there before the
// conversation's newer messages, and the host that comes back finds it
// gone. What the record holds is the engine's (conv's replica record):
// here it is bytes, one key per conversation.

// ReplyStore is the replies being posted, in the context bucket.
type ReplyStore struct {
	js    jetstream.JetStream
	kv    jetstream.KeyValue
	names names.Names
}

// RepliesOf is n's store of the replies being posted.
func RepliesOf(n *Node) ReplyStore { return ReplyStore{js: n.js, kv: n.ctxKV, names: n.s.Names} }

// StoredReply is a conversation's reply being posted, as stored.
type StoredReply struct {
	Conversation string // the conversation's token (names.Conversation)
	Value        []byte
	Revision     uint64 // what RemoveReply is given
}

// PutReply stores the reply being posted in conversation of binding b,
// replacing the one before, and returns its revision.
func (n ReplyStore) PutReply(ctx context.Context, b names.Binding, conversation string, value []byte) (uint64, error) {
	ack, err := putContextKey(ctx, n.js, n.names, names.ContextReply(b, conversation), value)
	if err != nil {
		return 0, fmt.Errorf("replicating the reply being posted in conversation %s: %w", conversation, err)
	}
	return ack.Sequence, nil
}

// Reply is the reply being posted in conversation of binding b; nil when
// none is.
func (n ReplyStore) Reply(ctx context.Context, b names.Binding, conversation string) (StoredReply, error) {
	e, err := n.kv.Get(ctx, names.ContextReply(b, conversation))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return StoredReply{Conversation: conversation}, nil
	case err != nil:
		return StoredReply{}, fmt.Errorf("reading the reply being posted in conversation %s: %w", conversation, err)
	}
	return StoredReply{Conversation: conversation, Value: e.Value(), Revision: e.Revision()}, nil
}

// Replies are the replies being posted in the conversations of binding b.
func (n ReplyStore) Replies(ctx context.Context, b names.Binding) ([]StoredReply, error) {
	w, err := n.kv.WatchFiltered(ctx, []string{names.ContextReplies(b)}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("listing the replies being posted of %s: %w", b, err)
	}
	defer func() { _ = w.Stop() }()
	var out []StoredReply
	for {
		select {
		case e := <-w.Updates():
			if e == nil {
				return out, nil // all there was
			}
			conv := strings.TrimSuffix(strings.TrimPrefix(e.Key(), b.Token()+"."), ".reply")
			out = append(out, StoredReply{Conversation: conv, Value: e.Value(), Revision: e.Revision()})
		case <-ctx.Done():
			return nil, fmt.Errorf("listing the replies being posted of %s: %w", b, ctx.Err())
		}
	}
}

// RemoveReply removes the reply being posted in conversation of binding
// b once it is posted, if it is still the one of revision: a later reply
// of the conversation stays.
func (n ReplyStore) RemoveReply(ctx context.Context, b names.Binding, conversation string, revision uint64) error {
	err := n.kv.Delete(ctx, names.ContextReply(b, conversation), jetstream.LastRevision(revision))
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return nil // replaced by a later reply
	}
	if err != nil {
		return fmt.Errorf("removing the posted reply of conversation %s: %w", conversation, err)
	}
	return nil
}
