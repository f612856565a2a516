package ingress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/format"
)

// Stream limits. The duplicate window must outlast the platforms'
// redeliveries: Slack retries an unacknowledged envelope for minutes, a
// Telegram poller that takes over re-reads at most what its predecessor
// had not stored the offset of. MaxAge drops what no owner consumed for a
// week (a binding whose hosts are all gone): such a message is stale.
const (
	DuplicateWindow = time.Hour
	MaxAge          = 7 * 24 * time.Hour
	// MaxEventSize bounds one event: Slack's longest message is 40,000
	// characters, up to 160 KB in UTF-8, and attachments travel by
	// reference.
	MaxEventSize = 1 << 20
)

// StreamConfig is the ingress stream: every conversation's events, kept
// until the binding's owner acknowledges them (a work queue: one durable
// consumer per binding, whose subject filters never overlap).
func StreamConfig(n names.Names, replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        n.Stream(),
		Description: "cc-connect cluster: inbound chat events, per binding and conversation",
		Subjects:    []string{n.StreamSubjects()},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  DuplicateWindow,
		MaxAge:      MaxAge,
		MaxMsgSize:  MaxEventSize,
		Discard:     jetstream.DiscardOld,
	}
}

// Publisher publishes the events a host receives from its platforms.
type Publisher struct {
	js     jetstream.JetStream
	names  names.Names
	origin string
	now    func() time.Time
}

// NewPublisher publishes as host origin.
func NewPublisher(js jetstream.JetStream, n names.Names, origin string) *Publisher {
	return &Publisher{js: js, names: n, origin: origin, now: time.Now}
}

// Published is what the stream said.
type Published struct {
	// Seq is the event's stream sequence (the first one's, for a
	// duplicate).
	Seq uint64
	// Duplicate: the stream already had an event with this id (the same
	// platform event, published by another host or before a restart).
	Duplicate bool
}

// Publish stores ev in the stream and returns once the stream has
// acknowledged it: stored, on a quorum of its replicas when it has more
// than one. Only then may the adapter acknowledge the platform's event; on
// an error it must not, so that the platform delivers it again (perhaps to
// a host whose NATS connection works).
func (p *Publisher) Publish(ctx context.Context, ev Event) (Published, error) {
	ev.V, ev.Origin, ev.Published = format.Written(), p.origin, p.now()
	if err := ev.Validate(); err != nil {
		return Published{}, err
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return Published{}, fmt.Errorf("encoding an ingress event: %w", err)
	}
	if len(data) > MaxEventSize {
		return Published{}, fmt.Errorf("%w: %d bytes, more than %d", ErrMalformed, len(data), MaxEventSize)
	}
	msg := &nats.Msg{Subject: p.names.In(ev.Binding.Names(), ev.Conversation(), p.origin), Data: data, Header: nats.Header{}}
	opts := []jetstream.PublishOpt{jetstream.WithExpectStream(p.names.Stream())}
	if id := ev.MsgID(); id != "" {
		opts = append(opts, jetstream.WithMsgID(id))
	}
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		ack, err := p.js.PublishMsg(ctx, msg, opts...)
		if err == nil {
			return Published{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
		}
		// Slack sends a mention twice (message and app_mention), often
		// to two hosts at once: the stream refuses the second copy while
		// it is storing the first, and answers it as a duplicate once it
		// has.
		if !inProcess(err) {
			return Published{}, fmt.Errorf("publishing to %s: %w", msg.Subject, err)
		}
		select {
		case <-ctx.Done():
			return Published{}, fmt.Errorf("publishing to %s: %w", msg.Subject, err)
		case <-time.After(wait):
		}
	}
}

// errCodeDuplicateInProcess is JetStream's "duplicate message id is in
// process" (NATS_JS_DUPLICATE_MESSAGE_ID_IN_PROCESS), which nats.go has no
// constant for.
const errCodeDuplicateInProcess jetstream.ErrorCode = 10158

func inProcess(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeDuplicateInProcess
}
