package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

const refusalText = "Sorry, you are not allowed to use the agent here. Ask an admin of this cc-connect to add you."

// The accept path. HandleMessage runs on the adapter's goroutine, where one
// slow call would hold up every conversation the adapter serves, and
// delay its acknowledgement to the platform (Slack redelivers after 3 s).
// So it does only what durability needs, in this order:
//
//  1. normalize: a bot's or an empty message is ignored;
//  2. dedupe: one check (inbox.Seen.Claim) against every id journaled
//     within the seen window; a second copy of a message being accepted
//     waits for the first to be on disk;
//  3. route: binding, allow list, mention, the conversation (created
//     from its files when it has none in memory); a reply without a
//     mention in a thread the engine does not know is journaled with a
//     check of the thread's root, and the first message of a known thread
//     after a start with a check for the messages before it that no
//     instance journaled: the conversation reads both back when the
//     message reaches the head of its FIFO (conv/checks.go), never here;
//  4. journal: one record, one fsync (journal.accept), which makes the id
//     seen too, and the item is in the conversation's FIFO;
//  5. return what it did (platform.Result): the adapter acknowledges.
//
// Nothing on it calls the platform: notices ("Queued
// (position n)", refusals) go to the conversation's control lane or, for
// a conversation without a session, to a notifier goroutine (notify), and
// attachments are fetched and senders named on the conversation's
// goroutine before the turn.

func ignored(why string) platform.Result {
	return platform.Result{Status: platform.Ignored, Reason: why}
}
func refused(why string) platform.Result {
	return platform.Result{Status: platform.Refused, Reason: why}
}

// HandleMessage accepts, refuses or ignores one chat message and says which
// (see the accept path above). An error means it was not handled and must
// not be acknowledged.
func (e *Engine) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	return e.handleMessage(ctx, m, nil)
}

// handleMessage is HandleMessage for a message from a cluster's stream too
// (d is its delivery, nil otherwise: cluster.go).
func (e *Engine) handleMessage(ctx context.Context, m platform.Message, d conv.Delivery) (res platform.Result, err error) {
	// The platform's ack waits for this (Slack redelivers after 3 s): a
	// slow disk shows in the accept duration before it shows as doubles.
	began := time.Now()
	defer func() {
		if err == nil && res.Status == platform.Queued {
			e.metrics.MessageAccepted(m.Target.Platform, time.Since(began))
		}
	}()
	log := e.log.With("platform", m.Target.Platform, "channel", m.Target.Channel, "thread", m.Target.Thread)
	e.metrics.PlatformEvent(m.Target.Platform, "message")
	if m.IsBot {
		log.Debug("Ignoring a bot's message", "user_id", m.UserID)
		return ignored("a bot's message"), nil
	}
	if strings.TrimSpace(m.Text) == "" && len(m.Attachments) == 0 {
		log.Debug("Ignoring an empty message")
		return ignored("empty"), nil
	}
	claim, err := e.convs.Claim(ctx, m)
	switch {
	case errors.Is(err, inbox.ErrDuplicate):
		log.Debug("Ignoring a message accepted before", "message_id", m.ID)
		return platform.Result{Status: platform.Duplicate}, nil
	case err != nil:
		return platform.Result{}, fmt.Errorf("handling a message: %w", err)
	case claim != nil:
		defer claim.Release()
	}
	b, ok := e.routes.resolve(m.Target.Platform, m.Target.Channel)
	if !ok {
		log.Debug("Ignoring a message from an unbound channel")
		return ignored("unbound channel"), nil
	}
	a, ok := e.ads.get(m.Target.Platform)
	if !ok {
		return platform.Result{}, fmt.Errorf("handling a message: no adapter named %q", m.Target.Platform)
	}
	key := conv.Key(m.Target)
	// A reply without a mention in a thread the engine does not know may
	// be in a thread whose root mentions the bot: it is journaled, and its
	// conversation reads the root back before it runs (conv/checks.go).
	var unrooted bool
	if b.NeedsMention(m.IsDM) && !m.Mentioned {
		var ignore bool
		if unrooted, ignore = e.convs.Unmentioned(a, m); ignore {
			log.Debug("Ignoring a message that does not mention the bot", "session_key", key)
			return ignored("no mention of the bot"), nil
		}
	}
	reply := m.Target
	reply.MessageID = ""
	if !b.Allowed(m.UserID) {
		if unrooted {
			// Not the bot's thread as far as anyone knows: chatter
			// there is not refused aloud.
			log.Debug("Ignoring a message that does not mention the bot", "session_key", key)
			return ignored("no mention of the bot"), nil
		}
		e.refuseOnce(a, reply, m)
		return refused("user not allowed"), nil
	}
	res, err = e.convs.Accept(b, a, m, d, unrooted)
	if errors.Is(err, conv.ErrStopped) && d != nil {
		// An event of the cluster's stream: not refused, not settled; it
		// stays in the stream for the binding's next holder.
		return platform.Result{}, fmt.Errorf("handling a message: %w", err)
	}
	if errors.Is(err, conv.ErrStopped) {
		e.notices.notify(a, reply, render.ShutdownText)
		return refused("shutting down"), nil
	}
	return res, err
}

// refuseOnce answers a user who may not use the agent, once per thread, so
// that a busy channel is not flooded with refusals.
func (e *Engine) refuseOnce(a platform.Adapter, to platform.Target, m platform.Message) {
	key := conv.Key(to)
	first := e.refused.Add(key)
	e.log.Info("Refused a message from a user who is not allowed", "platform", to.Platform, "channel", to.Channel,
		"thread", to.Thread, "session_key", key, "user_id", m.UserID, "user_name", m.UserName, "told", first)
	if first && !e.notices.notify(a, to, refusalText) {
		// Not told after all: the thread's next message tries again.
		e.refused.Forget(key)
	}
}

// HandleAction routes a button press on a permission prompt to the session
// that asked. Only the binding's approvers may answer (mayApprove), and
// only from the prompt's own conversation. Like HandleMessage it posts
// nothing itself.
func (e *Engine) HandleAction(ctx context.Context, act platform.Action) error {
	e.metrics.PlatformEvent(act.Target.Platform, "action")
	a, ok := e.ads.get(act.Target.Platform)
	if !ok {
		return fmt.Errorf("handling an action: no adapter named %q", act.Target.Platform)
	}
	if m, ok := conv.RevertPress(act); ok {
		// A turn summary's Revert button: its presser's "!revert", through
		// the accept path as if typed (the allow list, the command's right).
		_, err := e.handleMessage(ctx, m, nil)
		return err
	}
	reply := act.Target
	reply.MessageID = ""
	if text := e.convs.Answer(act); text != "" {
		e.notices.notify(a, reply, text)
	}
	return nil
}
