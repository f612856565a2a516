package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/trigger"
)

// Inbound is the handler a cluster host's adapters run with in place of
// the engine: it routes each event to its binding as the engine would,
// publishes it to the ingress stream and returns once the stream
// acknowledged it, so that the adapter acknowledges the platform's event
// only then (on an error it does not, and the platform delivers the event
// again, perhaps to a host whose NATS connection works). The binding's
// owner, wherever it runs, consumes it.
type Inbound struct{ n *Node }

// PublishTimeout bounds one publish: a host cut off from NATS gives up
// within Slack's 3 s ack deadline, leaves the envelope unacknowledged,
// and Slack sends it again, to any connection.
const PublishTimeout = 2 * time.Second

var _ platform.Handler = Inbound{}

// Inbound returns the publishing handler of this node.
func (n *Node) Inbound() Inbound { return Inbound{n: n} }

// HandleMessage publishes m. Bots' and empty messages are dropped here
// already (the owner's engine would ignore them): Slack sends the bot's
// own posts back to every connection.
func (in Inbound) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	if m.IsBot {
		return platform.Result{Status: platform.Ignored, Reason: "a bot's message"}, nil
	}
	if strings.TrimSpace(m.Text) == "" && len(m.Attachments) == 0 {
		return platform.Result{Status: platform.Ignored, Reason: "empty"}, nil
	}
	b, ok := in.n.s.Route(m.Target.Platform, m.Target.Channel)
	if !ok {
		return platform.Result{Status: platform.Ignored, Reason: "unbound channel"}, nil
	}
	if err := in.n.mayPublish(b); err != nil {
		return platform.Result{}, err
	}
	refs := make([]string, len(m.Attachments))
	for i, a := range m.Attachments {
		refs[i] = a.Ref // "" when the adapter cannot fetch it again: named to Claude as not passed on
	}
	ev, err := ingress.NewMessage(ingress.Binding{Platform: b.Platform, Channel: b.Channel}, m, refs)
	if err != nil {
		// Never publishable (ids too long for a subject, say): acking it
		// is right, the platform would only send it again.
		in.n.log.Warn("Dropping a message that cannot travel the cluster", "platform", m.Target.Platform,
			"channel", m.Target.Channel, "error", err)
		return platform.Result{Status: platform.Ignored, Reason: "not publishable"}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, PublishTimeout)
	defer cancel()
	pub, err := in.n.pub.Publish(ctx, ev)
	if err != nil {
		return platform.Result{}, fmt.Errorf("handing a message to the binding's owner: %w", err)
	}
	if pub.Duplicate {
		return platform.Result{Status: platform.Duplicate}, nil
	}
	return platform.Result{Status: platform.Queued}, nil
}

// HandleAction publishes a button press, in order with its conversation's
// messages.
func (in Inbound) HandleAction(ctx context.Context, a platform.Action) error {
	b, ok := in.n.s.Route(a.Target.Platform, a.Target.Channel)
	if !ok {
		return nil
	}
	if err := in.n.mayPublish(b); err != nil {
		return err
	}
	ev, err := ingress.NewAction(ingress.Binding{Platform: b.Platform, Channel: b.Channel}, a.ID, a)
	if err != nil {
		in.n.log.Warn("Dropping a button press that cannot travel the cluster", "platform", a.Target.Platform,
			"channel", a.Target.Channel, "error", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, PublishTimeout)
	defer cancel()
	if _, err := in.n.pub.Publish(ctx, ev); err != nil {
		return fmt.Errorf("handing a button press to the binding's owner: %w", err)
	}
	return nil
}

// ErrNotReceiver: this host is not in cluster.receivers and does not
// serve the event's binding, so it may not publish for it (its NATS user
// may not either). A webhook sent here should go to a receiver.
var ErrNotReceiver = errors.New("this host does not receive for the binding (cluster.receivers)")

// mayPublish refuses, before the server would, an event this host may
// not publish.
func (n *Node) mayPublish(b names.Binding) error {
	if !n.s.MayPublish(n.s.Host, b) {
		return fmt.Errorf("%w: %s", ErrNotReceiver, b)
	}
	return nil
}

// ErrUnbound: no binding routes a run's platform and channel; the run can
// never be taken.
var ErrUnbound = errors.New("no binding routes the channel")

// PublishRun hands a run without a person (a schedule's, a webhook's) to
// its binding's owner, as a platform message is: it returns once the
// stream acknowledged it, and says whether the stream had it already (the
// same run id, within its duplicate window: a schedule that another host
// fired before a failover, a webhook delivered to two hosts).
func (n *Node) PublishRun(ctx context.Context, r trigger.Run) (duplicate bool, err error) {
	b, ok := n.s.Route(r.Platform, r.Channel)
	if !ok {
		return false, fmt.Errorf("%w: %s/%s", ErrUnbound, r.Platform, r.Channel)
	}
	if err := n.mayPublish(b); err != nil {
		return false, err
	}
	ev, err := ingress.NewRun(ingress.Binding{Platform: b.Platform, Channel: b.Channel}, r)
	if err != nil {
		return false, err
	}
	pub, err := n.pub.Publish(ctx, ev)
	if err != nil {
		return false, fmt.Errorf("handing a run to the binding's owner: %w", err)
	}
	return pub.Duplicate, nil
}
